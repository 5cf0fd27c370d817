# scalar unit: registers, branches, counted loops, raw words
start:  li r1, 10
        li r2, 0x7fff
        addi r3, r1, 5
        add r4, r1, r3
        sub r5, r4, r1
        and r6, r2, r4
        or r7, r6, r5
        xor r8, r7, r2
        sll r9, r8, r1
        srl r10, r9, r1
        slt r11, r1, r2
        sltu r12, r1, r2
        slli r13, r1, 3
        srli r14, r13, 1
back:   beq r1, r0, done
        bne r1, r2, next
next:   blt r1, r2, skip
skip:   bge r2, r1, body
body:   loop r1, back
        vscale r2+4, r3, 8, imm=-2.5e-1 signal=1
        vmov 0, 16, 8 wait=1
        .word 0x0, 0x0
done:   halt
