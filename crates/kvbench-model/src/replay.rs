//! The scenario's replay phases: which stream a `kind = "replay"` phase runs and which of a
//! phase's fields apply to it (a replay's operations, keys, sizes and times come from its
//! stream, so the fields that shape synthetic operations are errors there, not ignored).

use crate::scenario::{At, FieldError, PhaseDef, Scenario};
use crate::spec::{positive_finite, PhaseKind};

/// Largest replay speed-up (a trace's times divided by it).
pub const SPEED_MAX: f64 = 1e6;

/// Where a replay phase's operations come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Trace,
    Mixgraph,
    Model,
}

impl PhaseDef {
    /// The stream of a replay phase (checked: exactly one is given).
    pub fn stream(&self) -> Option<Stream> {
        match (&self.trace, &self.mixgraph, &self.model) {
            (Some(_), None, None) => Some(Stream::Trace),
            (None, Some(_), None) => Some(Stream::Mixgraph),
            (None, None, Some(_)) => Some(Stream::Model),
            _ => None,
        }
    }
}

impl Scenario {
    /// The scenario's replay phase, if it has one (at most one: its stream makes the dataset).
    pub fn replay_phase(&self) -> Option<(usize, &PhaseDef)> {
        self.phases.iter().enumerate().find(|(_, p)| p.kind == PhaseKind::Replay)
    }
}

/// A phase's replay fields: on a replay, one stream and a speed in range; elsewhere none.
pub(crate) fn check(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    let given = [
        ("trace", phase.trace.is_some()),
        ("trace_format", phase.trace_format.is_some()),
        ("mixgraph", phase.mixgraph.is_some()),
        ("model", phase.model.is_some()),
        ("speed", phase.speed.is_some()),
    ];
    if phase.kind != PhaseKind::Replay {
        if let Some((name, _)) = given.iter().find(|(_, set)| *set) {
            let m = format!("`{name}` is for replay phases (kind = \"replay\"), not a {} phase", phase.kind.as_str());
            return Err(FieldError::new(&field_path(name), m));
        }
        return Ok(());
    }
    if phase.stream().is_none() {
        let m =
            "a replay phase needs exactly one stream: `trace = \"FILE\"`, `mixgraph = { ... }` or `model = { ... }`";
        return Err(FieldError::new(&field_path("kind"), m));
    }
    if phase.trace_format.is_some() && phase.trace.is_none() {
        return Err(FieldError::new(&field_path("trace_format"), "`trace_format` names the format of a `trace` file"));
    }
    if let Some(fmt) = &phase.trace_format {
        kvbench_trace::Format::parse(fmt).map_err(|e| FieldError::new(&field_path("trace_format"), e))?;
    }
    if phase.stream() == Some(Stream::Trace) && phase.count.is_some() {
        let m = "a trace's operations are its own: `count` applies to mixgraph and model streams (use `duration` to cut a trace short)";
        return Err(FieldError::new(&field_path("count"), m));
    }
    if let Some(v) = phase.speed {
        positive_finite(v, SPEED_MAX, false)
            .map_err(|e| FieldError::new(&field_path("speed"), format!("{e}: the recorded times are divided by it")))?;
    }
    check_synthetic_fields(phase, field_path)
}

/// The fields that shape synthetic operations, which a replay's stream decides instead.
const SYNTHETIC: [&str; 14] = [
    "distribution",
    "keys",
    "length",
    "min_length",
    "warmup",
    "mix",
    "hot_key",
    "zipf_exponent",
    "batch",
    "rate",
    "passes",
    "share",
    "writer",
    "until",
];

/// Fields that shape synthetic operations do not apply to a replay.
fn check_synthetic_fields(phase: &PhaseDef, field_path: &dyn Fn(&'static str) -> Vec<At>) -> Result<(), FieldError> {
    let set = crate::scenario::shaping_fields(phase).into_iter().filter(|(name, _)| SYNTHETIC.contains(name));
    match set.into_iter().find(|(_, on)| *on) {
        Some((name, _)) => Err(FieldError::new(
            &field_path(name),
            format!(
                "`{name}` does not apply to a replay: its operations, keys, sizes and times come from its stream \
                 (allowed: name, kind, trace, trace_format, mixgraph, model, speed, count, threads, duration, cache)"
            ),
        )),
        None => Ok(()),
    }
}

/// At most one replay phase: its stream makes the scenario's dataset.
pub(crate) fn check_one(scenario: &Scenario) -> Result<(), FieldError> {
    let replays: Vec<usize> =
        scenario.phases.iter().enumerate().filter(|(_, p)| p.kind == PhaseKind::Replay).map(|(i, _)| i).collect();
    if let Some(&second) = replays.get(1) {
        let m = "a scenario has at most one replay phase: its stream's keys are the dataset";
        return Err(FieldError::new(&[At::Key("phase"), At::Index(second), At::Key("kind")], m));
    }
    Ok(())
}
