"""What the eval's desktop apps share: sending what the person did to the eval's app server
(`GLOVEBOX_EVAL_SUBMIT`), the record the harness judges an attempt by."""

import json
import os
import urllib.request


def submit(fields):
    url = os.environ.get("GLOVEBOX_EVAL_SUBMIT")
    if not url:
        return False
    request = urllib.request.Request(
        url, data=json.dumps(fields).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False
