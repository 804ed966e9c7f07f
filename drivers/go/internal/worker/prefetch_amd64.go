package worker

//go:noescape
func prefetch(p *byte)
