"""Tool client: send requests to the support service on 127.0.0.1 and print the answers.

Usage:
    python3 client.py REQUEST_B64     one request {"method", "path", "body"} (base64 JSON)
    python3 client.py --batch         a JSON list of requests on stdin, answered in order

Prints JSON: {"status": int, "body": ...} (a list of those with --batch). Exit status 0
when the service answered (whatever the HTTP status), 3 when it could not be reached.
"""

import base64
import http.client
import json
import os
import sys

PORT = int(os.environ.get("SUPPORT_PORT", "8080"))


def send(conn, request):
    body = request.get("body")
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    conn.request(request["method"], request["path"], body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = {"error": raw.decode("utf-8", "replace")[:2000]}
    return {"status": response.status, "body": parsed}


def main():
    batch = sys.argv[1:] == ["--batch"]
    requests = json.load(sys.stdin) if batch else [json.loads(base64.b64decode(sys.argv[1]))]
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=20)
    answers = []
    try:
        for request in requests:
            answers.append(send(conn, request))
    except (OSError, http.client.HTTPException) as exc:
        sys.stderr.write(f"support service unreachable: {type(exc).__name__}: {exc}\n")
        return 3
    sys.stdout.write(json.dumps(answers if batch else answers[0]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
