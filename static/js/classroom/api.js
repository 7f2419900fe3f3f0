// The classroom's HTTP calls. Secrets go in the Authorization header, never in a URL.

export class ClassroomError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export async function call(method, path, { body, secret } = {}) {
  const headers = {};
  if (secret) headers.authorization = `Bearer ${secret}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      const detail = (await response.json()).detail;
      if (Array.isArray(detail) && detail[0]?.msg) message = detail[0].msg;
    } catch {
      /* not JSON */
    }
    throw new ClassroomError(response.status, message);
  }
  if (response.status === 204) return null;
  return response.json();
}
