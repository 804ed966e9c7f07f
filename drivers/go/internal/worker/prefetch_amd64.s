#include "textflag.h"

// func warm(b []byte)
TEXT ·warm(SB), NOSPLIT, $0-24
	MOVQ b_base+0(FP), AX
	MOVQ b_len+8(FP), CX
	TESTQ CX, CX
	JZ done
	PREFETCHT0 (AX)
	PREFETCHT0 -1(AX)(CX*1)
done:
	RET
