"""OSWorld's own PythonController (from the desktop-env wheel) against our guest server.

Usage: osworld_client.py PORT. Prints one JSON object with what each call returned.
"""
import json
import sys

from desktop_env.controllers.python import PythonController

port = int(sys.argv[1])
c = PythonController(vm_ip="127.0.0.1", server_port=port)
c.retry_times = 1
c.retry_interval = 0
shot = c.get_screenshot()
size = c.get_vm_screen_size()
script = c.run_bash_script("echo osworld-$((40 + 2))", timeout=10)
tree = c.get_accessibility_tree()
hostname = c.get_file("/etc/hostname")
listing = c.get_vm_directory_tree("/etc")
print(json.dumps({
    "screenshot_png": bool(shot) and shot[:8] == b"\x89PNG\r\n\x1a\n",
    "screenshot_bytes": len(shot or b""),
    "screen_size": size,
    "script": script,
    "tree_root": (tree or "")[:14],
    "hostname": (hostname or b"").decode().strip(),
    "listing_has_hostname": any(ch.get("name") == "hostname" for ch in (listing or {}).get("children", [])),
}))
