# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy for test_cluster_faults.py's partition scenarios: listens on the given
loopback ports and forwards each to the upstream; after SIGUSR1 it forwards
nothing in either direction (connections stay open, nothing answers), as a
partition looks to a client.  Exits after --seconds (bounded).

    python3 blackhole_proxy.py UPSTREAM_PORT SECONDS PORT [PORT...]"""
import asyncio
import signal
import sys

UP = int(sys.argv[1])
SECONDS = float(sys.argv[2])
PORTS = [int(p) for p in sys.argv[3:]]
cut = False


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if not cut:
                writer.write(data)
                await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(cr, cw):
    if cut:
        await asyncio.sleep(SECONDS)  # accepted, never answered
        cw.close()
        return
    ur, uw = await asyncio.open_connection("127.0.0.1", UP)
    await asyncio.gather(pipe(cr, uw), pipe(ur, cw))


async def main():
    def on_usr1():
        global cut
        cut = True
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, on_usr1)
    servers = [await asyncio.start_server(handle, "127.0.0.1", p) for p in PORTS]
    print("ready", flush=True)
    await asyncio.sleep(SECONDS)
    for s in servers:
        s.close()


asyncio.run(main())
