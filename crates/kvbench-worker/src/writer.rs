//! A read step's background writer (db_bench's readwhilewriting): one more thread of updates
//! at the writer's rate beside the readers, ending when they end. It is a paced update stream
//! of its own (seed and distribution from the policy) run by the same loop as any step's
//! thread; its latency joins the step as kind `update`, its ops do not join the readers'.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

use super::loops::{self, Ctx};
use super::tally::Tally;
use kvbench_model::engine::EngineError;
use kvbench_model::job::{OpsStep, PhaseKind};

/// The writer's stream: as many updates as a phase may have, until the readers end.
const WRITER_OPS: u64 = kvbench_model::spec::limits::OPS;

/// The update step a background writer runs.
pub(crate) fn writer_step(st: &OpsStep) -> Option<OpsStep> {
    let w = st.writer.as_ref()?;
    Some(OpsStep {
        name: format!("{} writer", st.name),
        kind: PhaseKind::Update,
        count: WRITER_OPS,
        threads: 1,
        batch: 1,
        keys_per_request: 1,
        connections: 1,
        pipeline: 1,
        kinds: vec![],
        thresholds: vec![],
        dist: w.dist.clone(),
        rec_seed: w.rec_seed,
        rate: Some(w.rate),
        open_per_op: false,
        field_updates: false,
        finish: false,
        duration_ms: None,
        steady: None,
        writer: None,
        ..st.clone()
    })
}

/// The running writer of a step.
pub(super) struct Writer<'scope> {
    flag: Arc<AtomicBool>,
    handle: ScopedJoinHandle<'scope, Tally>,
}

impl<'scope> Writer<'scope> {
    /// Start the writer of `ctx`'s step, if it has one.
    pub(super) fn start<'env>(threads: &'scope Scope<'scope, 'env>, ctx: &'env Ctx<'env>) -> Option<Writer<'scope>> {
        let step = writer_step(ctx.step)?;
        let flag = Arc::new(AtomicBool::new(false));
        let stop = flag.clone();
        let handle = threads.spawn(move || {
            let done = AtomicU64::new(0);
            let wctx =
                Ctx { step: &step, done: &done, lock: true, reopen: None, stop: Some(&stop), background: true, ..*ctx };
            loops::run_thread(&wctx, 0, 1)
        });
        Some(Writer { flag, handle })
    }

    /// The readers ended: stop the writer and add its latency and errors to theirs (its ops,
    /// busy time and intervals stay out of the readers' figures).
    pub(super) fn finish(self, all: &mut Tally) {
        self.flag.store(true, Ordering::Relaxed);
        let mut t = match self.handle.join() {
            Ok(t) => t,
            Err(_) => {
                all.error(EngineError::Store("the background writer panicked".into()));
                return;
            }
        };
        all.merge_outcomes(&mut t);
        // Readers never update: the writer's kind is a histogram of its own.
        all.hists.extend(t.hists);
    }
}
