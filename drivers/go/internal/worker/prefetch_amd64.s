#include "textflag.h"

// func warm(b []byte)
TEXT ·warm(SB), NOSPLIT, $0-24
	MOVQ b_base+0(FP), AX
	MOVQ b_len+8(FP), CX
	TESTQ CX, CX
	JZ done
	CMPQ CX, $512
	JLS lines
	MOVQ $512, CX
lines:
	LEAQ -1(AX)(CX*1), CX
	ANDQ $-64, AX
next:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JLS next
done:
	RET
