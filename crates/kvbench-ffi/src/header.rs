//! `kvbench_abi.h`, the constants part of kvbench.h, written from kvbench-worker's `abi` module:
//! the one source of the ABI's numbers. The file is checked in (C readers and cgo need no
//! build step); `tests/header.rs` fails when it differs from what [`abi_header`] writes.

use std::fmt::Write;

use kvbench_worker::abi::{Constant, ALL};

/// The command that writes the file again (`src/bin/abi-header.rs`).
pub const REGENERATE: &str = "cargo run -p kvbench-ffi --bin abi-header";

/// The header's path, in this crate beside kvbench.h.
pub fn abi_header_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kvbench_abi.h")
}

/// The text of `kvbench_abi.h`: one C enum for each group of [`ALL`], in its order.
pub fn abi_header() -> String {
    let mut h = format!(
        "/* The numbers of kvbench's worker-core ABI; kvbench.h includes this file.\n \
         * Generated from crates/kvbench-worker/src/abi.rs: edit that, then run\n \
         * `{REGENERATE}`. */\n\
         #ifndef KVBENCH_ABI_H\n#define KVBENCH_ABI_H\n"
    );
    let mut rest = ALL;
    while let Some(first) = rest.first() {
        let n = rest.iter().take_while(|c| c.group == first.group).count();
        write_group(&mut h, &rest[..n]);
        rest = &rest[n..];
    }
    h.push_str("\n#endif\n");
    h
}

/// One C enum; on one line when no constant of the group has a doc of its own.
fn write_group(header: &mut String, group: &[Constant]) {
    let _ = write!(header, "\n/* {} */\n", group[0].group.trim());
    if group.iter().all(|c| c.doc.trim().is_empty()) {
        let entries: Vec<String> =
            group.iter().map(|c| format!("{} = {}", c.name.to_string_lossy(), c.value)).collect();
        let _ = writeln!(header, "enum {{ {} }};", entries.join(", "));
        return;
    }
    header.push_str("enum {\n");
    let entries: Vec<String> = group
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let comma = if i + 1 < group.len() { "," } else { "" };
            format!("{} = {}{comma}", c.name.to_string_lossy(), c.value)
        })
        .collect();
    let width = entries.iter().map(String::len).max().unwrap_or(0);
    for (entry, c) in entries.iter().zip(group) {
        let line = match c.doc.trim() {
            "" => format!("  {entry}"),
            doc => format!("  {entry:<width$} /* {doc} */"),
        };
        let _ = writeln!(header, "{line}");
    }
    header.push_str("};\n");
}
