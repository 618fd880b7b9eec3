"""Scrapes Glovebox's /metrics as Prometheus would and parses it with the official Python
client's text-format parser (prometheus_client). Prints one JSON object: the HTTP status, the
content type, and every sample as [name, labels, value]; exits 1 on a parse error or a
histogram whose buckets are not cumulative or whose +Inf bucket differs from its count.

usage: metrics.py URL [TOKEN] [HOST]"""

import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    url = sys.argv[1]
    token = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
    host = sys.argv[3] if len(sys.argv) > 3 else None
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if host:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, kind, text = response.status, response.headers.get("Content-Type"), response.read().decode()
    except urllib.error.HTTPError as e:
        print(json.dumps({"status": e.code, "content_type": e.headers.get("Content-Type"), "samples": []}))
        return
    samples = []
    for family in text_string_to_metric_families(text):
        if family.type == "histogram":
            series = {}
            for s in family.samples:
                key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                series.setdefault(key, {"buckets": [], "count": None})
                if s.name.endswith("_bucket"):
                    series[key]["buckets"].append((float(s.labels["le"]), s.value))
                elif s.name.endswith("_count"):
                    series[key]["count"] = s.value
            for key, h in series.items():
                counts = [v for _, v in sorted(h["buckets"])]
                if counts != sorted(counts):
                    sys.exit(f"{family.name}{dict(key)}: buckets are not cumulative: {counts}")
                if not h["buckets"] or sorted(h["buckets"])[-1][0] != float("inf"):
                    sys.exit(f"{family.name}{dict(key)}: no +Inf bucket")
                if counts[-1] != h["count"]:
                    sys.exit(f"{family.name}{dict(key)}: +Inf {counts[-1]} != count {h['count']}")
        for s in family.samples:
            samples.append([s.name, s.labels, s.value])
    print(json.dumps({"status": status, "content_type": kind, "samples": samples}))


if __name__ == "__main__":
    main()
