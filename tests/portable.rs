//! The portable kernels can be forced (`ATTNBOOK_PORTABLE_SIMD`), so that results can be
//! checked as a reader's CPU without AVX would compute them; the choice is part of the
//! experiment cache key.

mod common;

use std::process::Command;

use common::Site;

fn build(site: &Site, portable: bool) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_attnbook"));
    command.arg("--root").arg(site.root()).arg("build");
    if portable {
        command.env("ATTNBOOK_PORTABLE_SIMD", "1");
    } else {
        command.env_remove("ATTNBOOK_PORTABLE_SIMD");
    }
    let output = command.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn forcing_the_portable_kernels_reruns_the_experiments_with_them() {
    let site = Site::fixture("slow");
    site.write(
        "content/01-a.md",
        r#"+++
title = "A"
number = 1
+++

```rust,experiment
println!("kernels: {}", kernel_level());
let s = lab.randn(32);
let h = lab.randn((7, 32));
let w = dot_softmax(&s, &h);
lab.value("w0", w[0]);
```

[0.0]{=w0 ±1}
"#,
    );
    let (code, stdout, stderr) = build(&site, false);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("1 run, 0 cached"), "{stdout}");
    let native = site.read("public/a/index.html");
    let (code, stdout, stderr) = build(&site, true);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("1 run, 0 cached"),
        "the cache ignored the variable: {stdout}"
    );
    let portable = site.read("public/a/index.html");
    assert!(portable.contains("kernels: portable"), "{portable}");
    if cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("avx2") {
        assert!(!native.contains("kernels: portable"), "{native}");
    }
    let (_, stdout, _) = build(&site, true);
    assert!(stdout.contains("0 run, 1 cached"), "{stdout}");
}
