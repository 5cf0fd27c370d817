fence load signal=2
fence load signal=2
fence load signal=4
fence load signal=4
fence load signal=4
fence load signal=4
fence mxu signal=6
fence mxu signal=6
fence vec signal=8
fence vec signal=8
dma.ld 96, 24, 1, 1, 1 signal=9
fence vec wait=9
dma.ld 0, 0, 16, 1, 1 wait=2 signal=1
dma.ld 32, 16, 8, 1, 1 wait=4 signal=3
li r4, 32
li r5, 40
li r6, 64
li r10, 0
li r11, 16
li r12, 16
li r13, 0
li r14, 16
li r15, 64
li r16, 144
li r17, 25
li r18, 96
li r24, 0
li r3, 0
li r2, 0
li r30, 0
li r26, 0
li r27, 1
li r28, 16
li r29, 16
addi r9, r10, 0
addi r7, r2, 24
addi r8, r2, 17
addi r31, r2, 0
bne r31, r0, l0_nbwrap_0
li r8, 16
l0_nbwrap_0:
li r25, 0
addi r31, r3, 0
bne r31, r0, l0_more_1
addi r31, r2, 0
bne r31, r0, l0_more_1
li r25, 1
l0_more_1:
l0_pass_2:
bne r2, r0, l0_not0_4
fence mxu wait=1
l0_not0_4:
mxu.lw r4 wait=3 signal=4
mxu.mm r9, r13, r12 wait=6 signal=5
beq r24, r0, l0_noepi_5
fence vec wait=8
vadd r19, r20, r22, b=r23, a_acc=1, b_bcast=1 wait=5 signal=6
vrelu r19, r19, r22 signal=7
dma.st r19, r21, r22, 1, 1 wait=7 signal=8
l0_noepi_5:
bne r25, r0, l0_now_6
dma.ld r5, r8, 8, 1, 1 wait=4 signal=3
addi r5, r5, 8
blt r5, r6, l0_slot_7
addi r5, r5, -32
l0_slot_7:
addi r8, r8, 8
l0_now_6:
beq r26, r0, l0_noa_8
dma.ld r28, r27, r29, 1, 1 signal=1
addi r28, r28, 16
addi r27, r27, 1
addi r26, r26, -1
l0_noa_8:
addi r4, r4, 8
blt r4, r6, l0_slot_9
addi r4, r4, -32
l0_slot_9:
addi r9, r9, 16
addi r19, r15, 0
addi r20, r13, 0
addi r21, r17, 0
addi r22, r12, 0
addi r23, r18, 0
li r24, 1
sub r13, r14, r13
sub r15, r16, r15
addi r17, r17, 1
addi r18, r18, 1
addi r2, r2, 1
addi r31, r2, -1
bne r31, r0, l0_next_10
fence mxu signal=2
sub r10, r11, r10
addi r17, r17, 15
addi r18, r18, -1
addi r30, r30, 16
li r2, 0
addi r3, r3, 1
addi r31, r3, -1
beq r31, r0, l0_layerdone_3
addi r31, r3, 0
bne r31, r0, l0_notlast_11
li r12, 16
l0_notlast_11:
l0_next_10:
addi r9, r10, 0
addi r7, r2, 24
addi r8, r2, 17
addi r31, r2, 0
bne r31, r0, l0_nbwrap_12
li r8, 16
l0_nbwrap_12:
li r25, 0
addi r31, r3, 0
bne r31, r0, l0_more_13
addi r31, r2, 0
bne r31, r0, l0_more_13
li r25, 1
l0_more_13:
beq r0, r0, l0_pass_2
l0_layerdone_3:
fence vec wait=8
vadd r19, r20, r22, b=r23, a_acc=1, b_bcast=1 wait=5 signal=6
vrelu r19, r19, r22 signal=7
dma.st r19, r21, r22, 1, 1 wait=7 signal=8
halt
