        li r1, 4                 ; four tiles
        li r2, 0                 ; VMEM row of the tile
        li r3, 0x100             ; HBM beat of the tile
tile:   dma.ld r2, r3, 8, 1, 1 signal=1
        vrelu r2+64, r2, 8 wait=1 signal=2
        dma.st r2+64, r3+0x1000, 8, 1, 1 wait=2
        addi r2, r2, 8
        addi r3, r3, 8
        loop r1, tile
        halt
