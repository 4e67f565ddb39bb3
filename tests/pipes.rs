//! A reader that stops reading (`attnbook build | head -1`) is not an error of attnbook's.

mod common;

use std::process::{Command, Stdio};

use common::Site;

#[test]
fn a_closed_stdout_or_stderr_is_no_panic() {
    let site = Site::fixture("basic");
    for closed in ["stdout", "stderr"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_attnbook"));
        command.arg("--root").arg(site.root()).arg("build");
        let mut child = if closed == "stdout" {
            command.stdout(Stdio::piped()).stderr(Stdio::piped())
        } else {
            command.stdout(Stdio::null()).stderr(Stdio::piped())
        }
        .spawn()
        .unwrap();
        // Close the pipe's reading end before attnbook writes its report.
        if closed == "stdout" {
            drop(child.stdout.take());
        } else {
            drop(child.stderr.take());
        }
        let stderr = child.stderr.take().map(std::io::read_to_string);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{closed} closed: {stderr:?}");
    }
}
