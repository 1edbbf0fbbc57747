//! `scripts/llama-server.sh`, which builds the real llama.cpp server the real-peer
//! tests use: its build is portable, and its cache can never serve a binary built
//! with other flags.

use std::path::Path;
use std::process::Command;

fn script(args: &[&str], extra_flags: Option<&str>) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut command = Command::new("bash");
    command
        .arg(Path::new(root).join("scripts/llama-server.sh"))
        .args(args);
    match extra_flags {
        Some(flags) => command.env("LLAMA_SERVER_CMAKE_FLAGS", flags),
        None => command.env_remove("LLAMA_SERVER_CMAKE_FLAGS"),
    };
    let output = command.output().expect("bash runs");
    assert!(
        output.status.success(),
        "llama-server.sh {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn the_server_build_is_portable_and_never_native() {
    let flags = script(&["flags"], None);
    let flags: Vec<&str> = flags.lines().collect();
    for wanted in [
        "-DGGML_NATIVE=OFF",
        "-DGGML_AVX2=ON",
        "-DGGML_FMA=ON",
        "-DGGML_F16C=ON",
        // The AMX kernels crash while loading the model on CPUs that have AMX.
        "-DGGML_AMX_INT8=OFF",
        "-DGGML_AMX_TILE=OFF",
        // Portable to AVX2-only CPUs.
        "-DGGML_AVX512=OFF",
    ] {
        assert!(flags.contains(&wanted), "{wanted} missing from {flags:?}");
    }
    for flag in &flags {
        let lower = flag.to_ascii_lowercase();
        assert!(
            !lower.contains("native") || *flag == "-DGGML_NATIVE=OFF",
            "a native flag: {flag}"
        );
        assert!(!lower.contains("-march"), "an -march flag: {flag}");
    }
}

#[test]
fn a_changed_flag_changes_the_cache_key_and_folder() {
    let key = script(&["key"], None);
    assert_eq!(key, script(&["key"], None), "the key is stable");
    assert!(
        key.starts_with("11434.0.0-"),
        "keyed by the llama.cpp version: {key}"
    );
    let changed = script(&["key"], Some("-DGGML_AVX512=ON"));
    assert_ne!(key, changed, "a flag changed, the key did not");
    assert_ne!(
        script(&["build-dir"], None),
        script(&["build-dir"], Some("-DGGML_AVX512=ON"))
    );
    assert!(
        script(&["build-dir"], None)
            .trim_end()
            .ends_with(key.trim_end())
    );
}

/// Where the test command built the server, its real compile commands name no
/// native CPU either (the script refuses such a build, and this checks it did).
#[test]
fn the_built_server_was_compiled_without_native_flags() {
    if std::env::var_os("LLAMA_SERVER_URL").is_none() {
        eprintln!("skipping: no server was built for this run (LLAMA_SERVER_URL is not set)");
        return;
    }
    let build = script(&["build-dir"], None);
    let commands = Path::new(build.trim_end()).join("compile_commands.json");
    let commands = std::fs::read_to_string(&commands)
        .unwrap_or_else(|error| panic!("{}: {error}", commands.display()));
    assert!(commands.contains("-mavx2"), "the AVX2 kernels are compiled");
    assert!(!commands.contains("=native"), "a native flag was compiled");
    assert!(!commands.contains("-mamx"), "AMX kernels were compiled");
    assert!(
        !commands.contains("-mavx512"),
        "AVX-512 kernels were compiled"
    );
}
