# form: unrolled (21 instructions; loops not built, unrolled 21)
# tensorpod compiler: 1 layer(s) for preset 'tiny' (n=8, vmem_rows=2048, acc_rows=256)
# semaphores: 1 A_FULL, 2 A_FREE, 3 W_FULL, 4 W_FREE, 5 ACC_FULL, 6 ACC_FREE, 7 OUT_FULL, 8 OUT_FREE,
#             9 BIAS, 10 LAYER (the scheme is described in sw/compiler/compiler.cpp)
# layer 0 (16x8x8): A@0 W@16 -> C@24; Kb=1 Nb=1, 1 M block(s) of 16 rows, 96 VMEM rows
# initial tokens: each queue owns its free buffers
fence load signal=2                                                      # 2 A_FREE free; signal A_FREE
fence load signal=2                                                      # signal A_FREE
fence load signal=4                                                      # 4 W_FREE free; signal W_FREE
fence load signal=4                                                      # signal W_FREE
fence load signal=4                                                      # signal W_FREE
fence load signal=4                                                      # signal W_FREE
fence mxu signal=6                                                       # 2 ACC_FREE free; signal ACC_FREE
fence mxu signal=6                                                       # signal ACC_FREE
fence vec signal=8                                                       # 2 OUT_FREE free; signal OUT_FREE
fence vec signal=8                                                       # signal OUT_FREE

# layer 0 (16x8x8): VMEM A[0]@0 A[1]@16 (16 rows each), W slots@32 (4 x 8 rows), OUT@64,80; ACC@0,16
dma.ld 0, 0, 16, 1, 1 wait=2 signal=1                                    # A block 0 (rows 0..15) K-tile 0 -> A[0]; wait A_FREE, signal A_FULL
dma.ld 32, 16, 8, 1, 1 wait=4 signal=3                                   # W tile (k 0, n 0) -> slot 0; wait W_FREE, signal W_FULL
fence mxu wait=1                                                         # A block 0 K-tile 0 loaded; wait A_FULL
mxu.lw 32 wait=3 signal=4                                                # weights (k 0, n 0); wait W_FULL, signal W_FREE
mxu.mm 0, 0, 16 wait=6 signal=5                                          # A[0] K-tile 0 -> ACC[0]; wait ACC_FREE, signal ACC_FULL
fence mxu signal=2                                                       # A[0] read by every mm; signal A_FREE
fence vec wait=8                                                         # OUT[0] free (initial token); wait OUT_FREE
vmov 64, 0, 16, a_acc=1 wait=5 signal=6                                  # block 0 cols tile 0: ACC[0] -> OUT[0]; wait ACC_FULL, signal ACC_FREE
fence vec signal=7                                                       # signal OUT_FULL
dma.st 64, 24, 16, 1, 1 wait=7 signal=8                                  # C rows 0..15, cols tile 0; wait OUT_FULL, signal OUT_FREE
halt                                                                     # done when every queue has drained
