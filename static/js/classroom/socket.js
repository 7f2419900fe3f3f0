// A room's WebSocket that keeps itself open: it reconnects with backoff (0.5 s doubling to 8 s,
// with jitter) after Wi-Fi drops or a server restart, and catches up from the first message of
// each connection (the whole current state). Messages older than the last seen `seq` are dropped.
//
//   new RoomSocket(code, { onMessage(msg), onStatus(status, detail), presenterKey?, seat? })
//   seat(): a follower's kept seat (offered as the subprotocol "seat.<token>", so it keeps its one vote)
//   status: "connecting" | "live" | "retrying" | "closed" (the room is gone: no more retries)

const HEARTBEAT_MS = 15_000; // a ping this often; no message for 2.5× as long = a dead link
const PRESENTER_PROTOCOL = "attention3d.presenter";
const FOLLOWER_PROTOCOL = "attention3d.follower";

export class RoomSocket {
  constructor(code, { onMessage, onStatus, presenterKey = null, seat = () => null }) {
    this.code = code;
    this.seat = seat;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.presenterKey = presenterKey;
    this.seq = -1;
    this.delay = 500;
    this.stopped = false;
    this.ws = null;
    this.timer = null;
    this.lastHeard = 0;
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.connect();
  }

  url() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${window.location.host}/api/rooms/${encodeURIComponent(this.code)}/ws`;
  }

  connect() {
    if (this.stopped) return;
    this.onStatus("connecting");
    const seat = this.seat();
    const protocols = this.presenterKey
      ? [PRESENTER_PROTOCOL, `key.${this.presenterKey}`]
      : [FOLLOWER_PROTOCOL, ...(seat ? [`seat.${seat}`] : [])];
    const ws = new WebSocket(this.url(), protocols);
    this.ws = ws;
    ws.addEventListener("open", () => {
      this.delay = 500;
      this.lastHeard = Date.now();
      this.onStatus("live");
    });
    ws.addEventListener("message", (e) => {
      this.lastHeard = Date.now();
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      if (typeof msg.seq === "number") {
        // a connection's first message (it has the followers too) is the truth: take it whole
        // (a restarted Redis may count from 1 again); later ones are dropped when seen already
        const hello = "followers" in msg;
        if (!hello && msg.seq <= this.seq) return;
        this.seq = msg.seq;
      }
      if (msg.closed) {
        this.stop();
        this.onStatus("closed", msg.closed);
      }
      this.onMessage(msg);
    });
    ws.addEventListener("close", (e) => {
      if (ws !== this.ws || this.stopped) return;
      if (e.code === 4404) {
        this.stop();
        this.onStatus("closed", e.reason || "this room is closed");
        return;
      }
      if (e.code === 4409) {
        this.onStatus("retrying", "the room is full");
      } else this.onStatus("retrying");
      const wait = this.delay * (0.75 + Math.random() * 0.5);
      this.delay = Math.min(this.delay * 2, 8000);
      this.timer = setTimeout(() => this.connect(), wait);
    });
  }

  beat() {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    if (Date.now() - this.lastHeard > HEARTBEAT_MS * 2.5) {
      ws.close(); // silent too long (a dropped Wi-Fi link): reconnect
      return;
    }
    ws.send('{"ping":1}');
  }

  send(obj) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(obj));
      return true;
    }
    return false;
  }

  /** Reconnect now (a "retry" button, or the page coming back from the background). */
  poke() {
    if (this.stopped || (this.ws && this.ws.readyState <= WebSocket.OPEN)) return;
    clearTimeout(this.timer);
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close();
  }
}
