# SPDX-License-Identifier: Apache-2.0
"""faultrelay - a TCP relay between the proxy and mariadbd that cuts on cue.

    relay = FaultRelay(backend_port).start()       # listens on relay.port
    proxy backend = 127.0.0.1:relay.port
    relay.arm(Fault("s2c", action="rst", after_bytes=100000))
    ... the first connection to pass 100000 bytes from the server is reset

Each accepted connection gets two pump threads (client to server "c2s",
server to client "s2c"). An armed Fault watches one direction of every
connection (or of the connections accepted after arm() when new_only) and
fires once, at the first chunk where its trigger holds:
  after_bytes=N   N bytes have passed in that direction since arm()
  pattern=b"..."  the bytes appear (searched in each chunk with the tail of
                  the one before); when="before" drops the chunk holding them
                  (the server never sees a matched COMMIT), when="after"
                  forwards it and fires at the next bytes of the other
                  direction (the COMMIT reached the server, its OK is cut)
  packet=N        the Nth chunk (1-based) of that direction since arm()
Actions, on that connection only:
  rst    SO_LINGER 0 and close both sockets: both peers see a reset
  fin    shutdown and close both sockets: both peers see an orderly close
  stall  stop forwarding both ways and keep both sockets open (a black
         hole: the peers' kernels still acknowledge, nothing more comes)
         until release() or stop()
  delay  sleep `seconds` before forwarding that chunk, then go on
  replace  forward the chunk with the pattern (wholly inside it) replaced by
         `replacement`, of the same length, then go on: the server gets a
         statement it refuses (another table name, a syntax error) on a
         connection that stays up
Faults armed for one direction are watched one at a time, in arm() order.
fired is an Event set when the fault has fired; stop() closes everything.
Threads only, no asyncio, so a test drives it from plain blocking code.
"""
import os
import socket
import struct
import sys
import threading
import time


class Fault:
    def __init__(self, direction, action, after_bytes=None, pattern=None, packet=None,
                 when="before", seconds=0.0, new_only=False, replacement=None):
        assert direction in ("c2s", "s2c") and action in ("rst", "fin", "stall", "delay",
                                                          "replace")
        assert action != "replace" or (pattern is not None and replacement is not None and
                                       len(replacement) == len(pattern))
        self.replacement = replacement
        self.direction, self.action, self.when = direction, action, when
        self.after_bytes, self.pattern, self.packet = after_bytes, pattern, packet
        self.seconds, self.new_only = seconds, new_only
        self.seen_bytes = self.seen_packets = 0
        self.fired = threading.Event()
        self.conn = None  # the _Conn it fired on

    def matches(self, chunk, tail):
        """How many bytes of chunk to forward before firing, or None."""
        self.seen_packets += 1
        if self.packet is not None:
            return 0 if self.seen_packets >= self.packet else None
        if self.after_bytes is not None:
            before = self.seen_bytes
            self.seen_bytes += len(chunk)
            if self.seen_bytes < self.after_bytes:
                return None
            return max(0, self.after_bytes - before)
        if self.pattern is not None and self.action == "replace":
            return 0 if self.pattern in chunk else None
        if self.pattern is not None:
            # a match must end in this chunk: one wholly in the tail was seen before
            if (tail + chunk).find(self.pattern, max(0, len(tail) - len(self.pattern) + 1)) < 0:
                return None
            return len(chunk) if self.when == "after" else 0
        return None


class _Conn:
    def __init__(self, relay, client, server, serial):
        self.relay, self.client, self.server, self.serial = relay, client, server, serial
        self.dead = False
        self.stalled = threading.Event()
        self.pending_other = None  # a Fault to fire at the other direction's next bytes

    def kill(self, how):
        if self.dead:
            return
        self.dead = True
        for s in (self.client, self.server):
            try:
                if how == "rst":
                    # SHUT_RD sends nothing but wakes the other pump's recv, so that
                    # the close below is the last reference and sends the RST now
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.shutdown(socket.SHUT_RD)
                else:
                    s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def fire(self, f):
        if os.environ.get("FR_DEBUG"):
            sys.stderr.write("faultrelay: %s %s on connection %d\n"
                             % (f.action, f.pattern or f.after_bytes or f.packet, self.serial))
        f.conn = self
        f.fired.set()
        if f.action in ("rst", "fin"):
            self.kill(f.action)
        elif f.action == "stall":
            self.stalled.set()

    def pump(self, direction):
        src, dst = (self.client, self.server) if direction == "c2s" else (self.server,
                                                                           self.client)
        other = "s2c" if direction == "c2s" else "c2s"
        tail = b""
        while not self.dead:
            try:
                chunk = src.recv(65536)
            except OSError:
                chunk = b""
            if self.stalled.is_set():
                self.relay.released.wait()
                if not self.relay.stopping:
                    self.stalled.clear()  # release(): the connection goes on
                else:
                    return
            if not chunk:
                self.kill("fin")
                return
            p = self.pending_other
            if p is not None and p.direction == direction:
                self.pending_other = None
                self.fire(p)
                if p.action != "delay":
                    if p.action == "stall":
                        self.relay.released.wait()
                    return
            f = self.relay.fault_for(self, direction)
            cut = f.matches(chunk, tail) if f else None
            tail = chunk[-64:]
            if cut is not None and not f.fired.is_set():
                if f.pattern is not None and f.when == "after":
                    self.relay.take(f)
                    f.direction = other
                    self.pending_other = f  # before sending: the answer may be quick
                    self.send(dst, chunk)
                    continue
                self.relay.take(f)
                if f.action == "replace":
                    self.fire(f)
                    self.send(dst, chunk.replace(f.pattern, f.replacement, 1))
                    continue
                if f.action == "delay":
                    self.fire(f)
                    time.sleep(f.seconds)
                    self.send(dst, chunk)
                    continue
                self.send(dst, chunk[:cut])
                self.fire(f)
                if f.action == "stall":
                    self.relay.released.wait()
                    if self.relay.stopping:
                        return
                    self.stalled.clear()
                    self.send(dst, chunk[cut:])
                    continue
                return
            self.send(dst, chunk)

    def send(self, dst, data):
        try:
            if data:
                dst.sendall(data)
        except OSError:
            self.kill("fin")


class FaultRelay:
    def __init__(self, backend_port, host="127.0.0.1"):
        self.backend = (host, backend_port)
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind((host, 0))
        self.lsock.listen(256)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.faults = []
        self.conns = []
        self.serial = 0
        self.stopping = False
        self.released = threading.Event()

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            try:
                s = socket.create_connection(self.backend, timeout=5)
                s.settimeout(None)
            except OSError:
                c.close()
                continue
            for x in (c, s):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.serial += 1
                conn = _Conn(self, c, s, self.serial)
                self.conns.append(conn)
            for d in ("c2s", "s2c"):
                threading.Thread(target=conn.pump, args=(d,), daemon=True).start()

    def arm(self, fault):
        """Watches for fault from now on; returns it (wait on fault.fired)."""
        with self.lock:
            fault.min_serial = self.serial + 1 if fault.new_only else 0
            self.faults.append(fault)
        return fault

    def fault_for(self, conn, direction):
        with self.lock:
            for f in self.faults:
                if f.direction == direction and conn.serial >= f.min_serial:
                    return f
        return None

    def take(self, f):
        with self.lock:
            if f in self.faults:
                self.faults.remove(f)

    def disarm(self):
        with self.lock:
            self.faults = []

    def release(self):
        """Stalled connections go on forwarding (their peers may have left)."""
        self.released.set()
        time.sleep(0.05)
        self.released.clear()

    def live(self):
        with self.lock:
            return [c for c in self.conns if not c.dead]

    def stop(self):
        self.stopping = True
        self.released.set()
        try:
            self.lsock.close()
        except OSError:
            pass
        for c in list(self.conns):
            c.kill("fin")
