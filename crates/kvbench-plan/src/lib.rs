//! kvbench-plan: the plan every runtime executes byte for byte (docs/plan-format.md). It stands
//! on the model alone; the Rust worker uses it directly, the Go, Python, Java and Node workers
//! through the worker core, and `tests/vectors/derive.json` pins its outputs, so a change here is
//! a format change.
//!
//! - [`primitives`]: the SplitMix64 draws every seed comes from, and [`primitives::Perm`], the
//!   permutation that makes "every record, in random order" a permutation.
//! - [`derive`]: keys and values of record `r` ([`derive::Keys`], [`derive::Values`]), YCSB's
//!   key hash and its zipfian and latest draws.
//! - [`opstream`]: the operations of one thread of a step, each a function of its index.
//! - [`planfile`]: what cannot be derived (a stored dataset's records, a trace's operations),
//!   read, checked and cached; [`replay`] builds one from a trace.
//! - [`gen`]: the dataset generators (synthetic, JSON documents, dictionaries).
//!
//! Keys are derived, not stored, and a shuffled load visits every record once:
//!
//! ```
//! use kvbench_model::spec::KeyKind;
//! use kvbench_plan::{derive::derived_key, primitives::Perm};
//!
//! let mut key = Vec::new();
//! derived_key(KeyKind::Decimal, 16, 42, &mut key);
//! assert_eq!(key, b"0000000000000042");
//! derived_key(KeyKind::Ycsb, 0, 42, &mut key);
//! assert!(key.starts_with(b"user"));
//!
//! let order = Perm::new(1000, 7);
//! let mut seen: Vec<u64> = (0..order.len()).map(|i| order.at(i)).collect();
//! assert_ne!(seen[..10], (0..10).collect::<Vec<u64>>()[..]);
//! seen.sort_unstable();
//! assert_eq!(seen, (0..1000).collect::<Vec<u64>>());
//! ```

pub mod derive;
pub mod gen;
pub mod huge;
pub mod opstream;
pub mod planfile;
pub mod primitives;
pub mod replay;

// The files here moved from kvbench-core and keep their `crate::` paths to the model.
use kvbench_model::{input, job, spec};
