#!/usr/bin/env python3
"""A stand-in for systemd's notify socket: binds a unix datagram socket with SO_PASSCRED and prints one
JSON line per message received: {"pid", "uid", "gid", "message"} (the sender's credentials as the
kernel delivered them). Prints {"listening": path} once bound. Usage: notify-listener.py <path|@abstract>"""
import json, os, socket, struct, sys

path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind("\0" + path[1:] if path.startswith("@") else path)
print(json.dumps({"listening": path}), flush=True)
ucred = struct.calcsize("3i")
while True:
    data, anc, _flags, _addr = s.recvmsg(4096, socket.CMSG_SPACE(ucred))
    pid = uid = gid = None
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid, uid, gid = struct.unpack("3i", payload[:ucred])
    print(json.dumps({"pid": pid, "uid": uid, "gid": gid, "message": data.decode()}), flush=True)
