//! Writes kvbench-ffi's `kvbench_abi.h` from kvbench-worker's `abi` module (see
//! `kvbench_ffi::header`).

fn main() -> std::process::ExitCode {
    let path = kvbench_ffi::header::abi_header_path();
    match std::fs::write(&path, kvbench_ffi::header::abi_header()) {
        Ok(()) => {
            println!("wrote {}", path.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("abi-header: cannot write {}: {e}", path.display());
            std::process::ExitCode::FAILURE
        }
    }
}
