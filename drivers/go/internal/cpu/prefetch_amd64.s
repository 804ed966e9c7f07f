#include "go_asm.h"
#include "textflag.h"

// func Prefetch(p unsafe.Pointer, n int)
TEXT ·Prefetch(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
	CMPQ CX, $const_maxBytes
	JLE sized
	MOVQ $const_maxBytes, CX
sized:
	LEAQ -1(AX)(CX*1), DX // the last byte
	ANDQ $-64, AX         // its first byte's line
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLE loop
done:
	RET
