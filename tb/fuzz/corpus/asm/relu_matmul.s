# out = relu(A x W + bias) * 0.5: A is 16 x 8, W is 8 x 8 (bf16, one element per 32-bit lane),
# bias is one fp32 row. Semaphores order the four queues.
.preset tiny
.set A_HBM, 0x000          ; HBM beats
.set W_HBM, 0x100
.set BIAS_HBM, 0x200
.set OUT_HBM, 0x300
.set A, 0                  ; VMEM rows
.set W, A+16
.set BIAS, W+8
.set OUT, BIAS+1

loads:  dma.ld W, W_HBM, 1, 8, 0 signal=1          ; 8 contiguous beats
        dma.ld A, A_HBM, 1, 16, 0 signal=2
        dma.ld BIAS, BIAS_HBM, 1, 1, 0 signal=3
matmul: mxu.lw W wait=1
        mxu.mm A, 0, 16 wait=2 signal=4            ; ACC[0..15] = A x W
        fence vec wait=3                           ; the vector queue waits for the bias
        vadd OUT, 0, 16, b=BIAS, a_acc=1, b_bcast=1 wait=4
        vrelu OUT, OUT, 16                         ; in place
        vscale OUT, OUT, 16, imm=0.5 signal=5
        dma.st OUT, OUT_HBM, 1, 16, 0 wait=5
        halt
