// A room's WebSocket that keeps itself open: it reconnects with backoff (0.5 s doubling to
// `maxDelay`, 2.5 s by default, with jitter), so a page is back within about 3 s of a server that
// restarted; it catches up from the first message of each connection (the whole current state).
// Messages older than the last seen `seq` are dropped.
//
//   new RoomSocket(code, { onMessage(msg), onStatus(status, detail), presenterKey?, seat?, maxDelay?, waitAlways? })
//   seat(): a follower's kept seat (offered as the subprotocol "seat.<token>", so it keeps its one vote)
//   status: "connecting" | "live" | "retrying" (detail: why, when the server said) |
//           "waiting" (the room is not there now, but this page was in it: its presenter may open it
//           again, e.g. after the room store restarted empty; tried again for WAIT_MS) |
//           "closed" (the room is gone: no more retries)
//
// The server's own words: {"lost": why} before it closes with 1013 (its room store is away: connect
// again), {"missing": why} before 4404 (no such room), {"closed": why} (the room closed: final).

import { t } from "../i18n.js";

const CLOSED_WHY = new Set(["expired", "closed"]); // app/classroom/broker.py's kinds of a room's end

const HEARTBEAT_MS = 15_000; // a ping this often; no message for 2.5× as long = a dead link
const WAIT_MS = 120_000; // how long a page that was in a room waits for it to be opened again
const PRESENTER_PROTOCOL = "attention3d.presenter";
const FOLLOWER_PROTOCOL = "attention3d.follower";

export class RoomSocket {
  constructor(code, { onMessage, onStatus, presenterKey = null, seat = () => null, maxDelay = 2500, waitAlways = false }) {
    this.code = code;
    this.seat = seat;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.presenterKey = presenterKey;
    this.maxDelay = maxDelay;
    this.waitAlways = waitAlways; // a presenter: a missing room is one to open again, never the end
    this.seq = -1;
    this.delay = 500;
    this.stopped = false;
    this.ws = null;
    this.timer = null;
    this.lastHeard = 0;
    this.wasIn = false; // this page has been in the room (a hello came)
    this.missingSince = null;
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.connect();
  }

  url() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${window.location.host}/api/rooms/${encodeURIComponent(this.code)}/ws`;
  }

  connect() {
    if (this.stopped) return;
    if (this.missingSince === null) this.onStatus("connecting");
    const seat = this.seat();
    const protocols = this.presenterKey
      ? [PRESENTER_PROTOCOL, `key.${this.presenterKey}`]
      : [FOLLOWER_PROTOCOL, ...(seat ? [`seat.${seat}`] : [])];
    const ws = new WebSocket(this.url(), protocols);
    this.ws = ws;
    this.why = null; // what the server said before it closed this connection
    ws.addEventListener("message", (e) => {
      if (ws !== this.ws) return;
      this.lastHeard = Date.now();
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      if (msg.lost) {
        this.why = { status: "retrying", detail: msg.lost };
        return;
      }
      if (msg.missing) {
        this.missing(msg.missing);
        return;
      }
      if (typeof msg.seq === "number") {
        // a connection's first message (it has the followers too) is the truth: take it whole
        // (a restarted Redis may count from 1 again); later ones are dropped when seen already
        const hello = "followers" in msg;
        if (!hello && msg.seq <= this.seq) return;
        this.seq = msg.seq;
        if (hello) this.arrived();
      }
      if (msg.closed) {
        this.stop();
        this.onStatus("closed", CLOSED_WHY.has(msg.why) ? t(`classroom.closed.${msg.why}`) : msg.closed);
      }
      this.onMessage(msg);
    });
    ws.addEventListener("close", (e) => {
      if (ws !== this.ws || this.stopped) return;
      if (e.code === 4404 && this.why?.status !== "waiting") {
        this.stop();
        this.onStatus("closed", t("classroom.socket.closed")); // the server's reason is English
        return;
      }
      if (this.why) this.onStatus(this.why.status, this.why.detail);
      else if (e.code === 4409) this.onStatus("retrying", t("classroom.socket.full"));
      else this.onStatus("retrying");
      const wait = this.delay * (0.75 + Math.random() * 0.5);
      this.delay = Math.min(this.delay * 2, this.maxDelay);
      this.timer = setTimeout(() => this.connect(), wait);
    });
  }

  /** A hello: the page is in the room (again). */
  arrived() {
    this.delay = 500;
    this.wasIn = true;
    this.missingSince = null;
    this.onStatus("live");
  }

  /** The server says the room is not there: the end, unless this page was in it lately (then wait). */
  missing(why) {
    const now = Date.now();
    if (this.wasIn || this.waitAlways) this.missingSince ??= now;
    if (this.missingSince !== null && (this.waitAlways || now - this.missingSince < WAIT_MS)) {
      this.why = { status: "waiting", detail: why };
      return;
    }
    this.stop();
    this.onStatus("closed", why);
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

  /** Reconnect now (a "retry" button, the page back from the background, a room opened again). */
  poke() {
    if (this.stopped || (this.ws && this.ws.readyState <= WebSocket.OPEN)) return;
    clearTimeout(this.timer);
    this.delay = 500;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) this.ws.close();
  }
}
