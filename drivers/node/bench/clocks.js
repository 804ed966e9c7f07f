'use strict';
// The clocks a Node loop can time a call with, by CPU time per two reads and their stores
// (docs/decisions.md, "Node.js worker"): node drivers/node/bench/clocks.js
const { performance } = require('perf_hooks');
function cpu(f, n) { const c0 = process.cpuUsage(); f(n); const c = process.cpuUsage(c0); return ((c.user + c.system) * 1e3) / n; }
function pn(n){ const t=new Float64Array(1024); for(let i=0;i<n;i++){const j=2*(i&511); t[j]=performance.now(); t[j+1]=performance.now();} return t; }
function hb(n){ const t=new BigInt64Array(1024); for(let i=0;i<n;i++){const j=2*(i&511); t[j]=process.hrtime.bigint(); t[j+1]=process.hrtime.bigint();} return t; }
function hr(n){ const t=new Float64Array(1024); for(let i=0;i<n;i++){const j=2*(i&511); const a=process.hrtime(); t[j]=a[0]*1e9+a[1]; const b=process.hrtime(); t[j+1]=b[0]*1e9+b[1];} return t; }
const a=[],b=[],c=[];
for (let r=0;r<7;r++){ a.push(cpu(pn,2e6)); b.push(cpu(hb,2e6)); c.push(cpu(hr,1e6)); }
const med=(x)=>x.sort((p,q)=>p-q)[x.length>>1].toFixed(1);
console.log(`CPU ns per two clock reads + stores (median of 7): performance.now() ${med(a)}, process.hrtime.bigint() ${med(b)}, process.hrtime() ${med(c)}`);
