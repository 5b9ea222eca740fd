# silent_conns.py PORT N SECS OUT: N connections to 127.0.0.1:PORT that send
# nothing, held for SECS seconds; each one the peer closes is opened again
# a second later (a flood that reconnects). OUT gets "opened=O closed=C open=N answered=A"
# (closed: by the peer; answered: of those, the ones that got bytes first,
# a 503).
import errno, selectors, socket, sys, time

port, n, secs, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
sel = selectors.DefaultSelector()
opened = closed = answered = failed = 0
end = time.time() + secs


def connect():
    global opened, failed
    s = socket.socket()
    s.setblocking(False)
    if s.connect_ex(("127.0.0.1", port)) not in (0, errno.EINPROGRESS):
        failed += 1
        s.close()
        return
    sel.register(s, selectors.EVENT_READ)
    opened += 1


for i in range(n):
    connect()
again = []	# when each closed one reconnects
while time.time() < end:
    while again and again[0] <= time.time():
        again.pop(0)
        connect()
    for key, ev in sel.select(0.2):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:
            answered += 1
        closed += 1
        sel.unregister(s)
        s.close()
        again.append(time.time() + 1)
open(out, "w").write("opened=%d closed=%d open=%d answered=%d failed=%d\n" %
                     (opened, closed, len(sel.get_map()), answered, failed))
