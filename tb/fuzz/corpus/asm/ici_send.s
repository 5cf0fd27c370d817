.preset tiny
.set PEER, 64
        dma.ld 0, 0x40, 8, 1, 1 signal=1
        ici.send vaddr=0, raddr=PEER, rows=8, dx=1, dy=0, rsem=3 wait=1 signal=2
        ici.send 0, 64, 8, -1, 0, rsem=3
        ici.send 0, 0, 1, 0, 0, abs=1
        fence ici wait=2
        fence 4
        halt
