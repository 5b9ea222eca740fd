# never_answer.py: a target that never answers, for tests/t_faults2.sh:
#   never_answer.py blackhole PORTFILE SECS   a listener whose accept queue is kept
#       full, so the kernel drops every further SYN (connect never completes)
#   never_answer.py stall PORTFILE SECS STATFILE   accepts TCP, never sends a byte
#       (a TLS handshake never finishes); STATFILE gets "open=N max=M total=T"
import selectors, socket, sys, time

mode, portfile, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
end = time.time() + secs
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
port = ls.getsockname()[1]
if mode == "blackhole":
    ls.listen(0)
    fill = []
    for _ in range(3):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        fill.append(c)
    time.sleep(0.3)
    open(portfile + ".tmp", "w").write("%d\n" % port)
    import os; os.rename(portfile + ".tmp", portfile)
    while time.time() < end:
        time.sleep(0.5)
    sys.exit(0)
statfile = sys.argv[4]
ls.listen(256)
ls.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ)
conns, mx, total = set(), 0, 0
def stat():
    open(statfile + ".tmp", "w").write("open=%d max=%d total=%d\n" % (len(conns), mx, total))
    import os; os.rename(statfile + ".tmp", statfile)
stat()
open(portfile + ".tmp", "w").write("%d\n" % port)
import os; os.rename(portfile + ".tmp", portfile)
while time.time() < end:
    for key, _ in sel.select(0.5):
        if key.fileobj is ls:
            try:
                c, _ = ls.accept()
            except OSError:
                continue
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
            conns.add(c)
            total += 1
            mx = max(mx, len(conns))
        else:
            c = key.fileobj
            try:
                d = c.recv(65536)
            except OSError:
                d = b""
            if d:
                continue
            sel.unregister(c)
            conns.discard(c)
            c.close()
        stat()
