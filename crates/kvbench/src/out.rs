//! Everything kvbench prints goes through here. A write that fails (a closed pipe, a full
//! disk) is an error the command returns, never a panic or a loop; what reaches a terminal
//! cannot carry control sequences from a file or a scenario.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

/// Exit status when standard output cannot be written (EX_IOERR of sysexits.h).
pub const EXIT_OUTPUT: i32 = 74;

/// Exit status when standard output's reader went away (`| head`): 128 + SIGPIPE, what a shell
/// reports for a program the signal ended, said with no message as such programs end.
pub const EXIT_PIPE: i32 = 128 + libc::SIGPIPE;

/// How every failed write to standard output begins.
const STDOUT_FAILED: &str = "cannot write to standard output";

/// How a write to a closed pipe begins: the reader is gone, nothing is wrong.
const STDOUT_CLOSED: &str = "standard output was closed by its reader";

/// `text` on standard output, secrets redacted, control characters escaped when it is a
/// terminal.
pub fn stdout(text: &str) -> Result<(), String> {
    let out = std::io::stdout();
    let text = kvbench_model::secret::scrub(text);
    let text: Cow<'_, str> =
        if out.is_terminal() { Cow::Owned(kvbench_report::terminal_safe(&text).into_owned()) } else { text };
    let mut w = out.lock();
    w.write_all(text.as_bytes()).and_then(|()| w.flush()).map_err(stdout_error)
}

/// One line on standard error, secrets redacted, control characters escaped. When standard
/// error itself fails there is nowhere left to say so: the line is dropped.
pub fn note(args: std::fmt::Arguments<'_>) {
    let line = kvbench_model::secret::scrub(&format!("{args}\n")).into_owned();
    let _ = std::io::stderr().lock().write_all(kvbench_report::terminal_safe(&line).as_bytes());
}

/// `eprintln!` that neither panics when standard error fails nor lets control characters through.
#[macro_export]
macro_rules! note {
    ($($t:tt)*) => { $crate::out::note(format_args!($($t)*)) };
}

/// `text` on stdout, then `code`; or the error and [`out::EXIT_OUTPUT`] when stdout fails.
pub fn print_then(text: &str, code: i32) -> i32 {
    match stdout(text) {
        Ok(()) => code,
        Err(e) => failed_output(&e),
    }
}

/// The exit status of a command that failed to print its output: the error said on stderr,
/// or [`EXIT_PIPE`] and nothing said when the reader went away.
pub fn failed_output(error: &str) -> i32 {
    if error.starts_with(STDOUT_CLOSED) {
        return EXIT_PIPE;
    }
    note(format_args!("error: {error}"));
    EXIT_OUTPUT
}

/// The error of a failed write to standard output.
pub fn stdout_error(error: std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        return STDOUT_CLOSED.into();
    }
    format!("{STDOUT_FAILED}: {error}")
}

/// The exit status of a command that stopped with error `error`: [`EXIT_OUTPUT`] when its output
/// could not be written, else 2 (bad input). The error is said on stderr.
pub fn exit_for(error: &str) -> i32 {
    if error.starts_with(STDOUT_FAILED) || error.starts_with(STDOUT_CLOSED) {
        return failed_output(error);
    }
    note(format_args!("error: {error}"));
    2
}
