//! Builds the sandbox's relay (src/process/relay.c): a static program with
//! no C library that evalua embeds and hands to bubblewrap (see
//! `process::relay`). Where it cannot be built (another architecture, no C
//! compiler that links statically), an empty file is embedded instead and
//! the sandbox falls back to the shell line it replaces.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/process/relay.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("relay");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let built = os == "linux" && (arch == "x86_64" || arch == "aarch64") && build(&out);
    if !built {
        std::fs::write(&out, b"").expect("write OUT_DIR/relay");
        println!("cargo:warning=the sandbox relay was not built here; sandboxed commands start through /bin/sh");
    }
}

fn build(out: &std::path::Path) -> bool {
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let mut cmd = compiler.to_command();
    // The flags that set its own optimisation and code model win over the
    // ones cc passes for linking into Rust (-fPIC, -ffunction-sections, …).
    cmd.args([
        "-Os",
        "-static",
        "-nostdlib",
        "-ffreestanding",
        "-fno-builtin",
        "-fno-stack-protector",
        "-fno-pie",
        "-no-pie",
        "-fno-asynchronous-unwind-tables",
        "-Wl,--build-id=none",
        "-s",
        "-o",
    ]);
    cmd.arg(out).arg("src/process/relay.c");
    // gcc turns byte loops into memcpy calls unless told not to (clang has no such flag).
    if !compiler.is_like_clang() {
        cmd.arg("-fno-tree-loop-distribute-patterns");
    }
    match cmd.output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            for line in String::from_utf8_lossy(&o.stderr).lines().take(5) {
                println!("cargo:warning=relay.c: {line}");
            }
            false
        }
        Err(e) => {
            println!("cargo:warning=relay.c: cannot run the C compiler: {e}");
            false
        }
    }
}
