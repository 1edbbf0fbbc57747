//! `scripts/llama-server.sh`, which builds the real llama.cpp server the real-peer
//! tests use: its build is portable, and its cache can never serve a binary built
//! with other flags.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script(args: &[&str], extra_flags: Option<&str>) -> String {
    script_with(args, extra_flags, None).0
}

/// Runs the script with `LLAMA_SERVER_CMAKE_FLAGS` and `LLAMA_SERVER_PREBUILT` as
/// given (`None`: inherited from the test command); returns stdout and stderr.
fn script_with(
    args: &[&str],
    extra_flags: Option<&str>,
    prebuilt: Option<&Path>,
) -> (String, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut command = Command::new("bash");
    command
        .arg(Path::new(root).join("scripts/llama-server.sh"))
        .args(args);
    match extra_flags {
        Some(flags) => command.env("LLAMA_SERVER_CMAKE_FLAGS", flags),
        None => command.env_remove("LLAMA_SERVER_CMAKE_FLAGS"),
    };
    if let Some(prebuilt) = prebuilt {
        command.env("LLAMA_SERVER_PREBUILT", prebuilt);
    }
    let output = command.output().expect("bash runs");
    assert!(
        output.status.success(),
        "llama-server.sh {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        String::from_utf8(output.stdout).expect("UTF-8 output"),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
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

/// Where the test command built the server, the CPU kernels it links were
/// compiled for AVX2 and nothing native or above (the script refuses anything
/// else, and this checks it did), whether it compiled them or reused the ones
/// llama-cpp-sys-2 built.
#[test]
fn the_built_server_was_compiled_without_native_flags() {
    if std::env::var_os("LLAMA_SERVER_URL").is_none() {
        eprintln!("skipping: no server was built for this run (LLAMA_SERVER_URL is not set)");
        return;
    }
    let build = script(&["build-dir"], None);
    let build = Path::new(build.trim_end());
    let kernels = build.join("kernel-flags.make");
    let kernels = std::fs::read_to_string(&kernels)
        .unwrap_or_else(|error| panic!("{}: {error}", kernels.display()));
    let commands = build.join("compile_commands.json");
    let commands = std::fs::read_to_string(&commands)
        .unwrap_or_else(|error| panic!("{}: {error}", commands.display()));
    assert!(kernels.contains("-mavx2"), "the AVX2 kernels are compiled");
    for compiled in [&kernels, &commands] {
        assert!(!compiled.contains("=native"), "a native flag was compiled");
        assert!(!compiled.contains("-mamx"), "AMX kernels were compiled");
        assert!(
            !compiled.contains("-mavx512"),
            "AVX-512 kernels were compiled"
        );
    }
}

/// A stand-in for llama-cpp-sys-2's build output: the real headers and cmake
/// cache of the test command's build, the CPU kernels' flags as given, and small
/// files for the libraries, `libraries` their content.
fn fake_prebuilt(real: &Path, name: &str, libraries: &str, kernel_flags: &str) -> PathBuf {
    let fake = crate::support::temp_dir(name);
    let build = fake.join("build");
    std::fs::create_dir_all(fake.join("include")).unwrap();
    for header in ["llama.h", "ggml.h", "ggml-backend.h", "ggml-cpu.h"] {
        std::fs::copy(
            real.join("include").join(header),
            fake.join("include").join(header),
        )
        .unwrap();
    }
    let mut files: Vec<(&str, String)> = [
        "src/libllama.a",
        "common/libllama-common.a",
        "common/libllama-common-base.a",
        "ggml/src/libggml.a",
        "ggml/src/libggml-cpu.a",
        "ggml/src/libggml-base.a",
        "vendor/hash/libvendor-hash.a",
        "vendor/cpp-httplib/libcpp-httplib.a",
    ]
    .into_iter()
    .map(|library| (library, libraries.to_owned()))
    .collect();
    files.push((
        "CMakeCache.txt",
        std::fs::read_to_string(real.join("build/CMakeCache.txt")).unwrap(),
    ));
    files.push((
        "ggml/src/CMakeFiles/ggml-cpu.dir/flags.make",
        kernel_flags.to_owned(),
    ));
    for (file, content) in files {
        let path = build.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    fake
}

/// The libraries llama-cpp-sys-2 built are reused only when they are the same
/// llama.cpp built for the same CPUs, and their checksums key the cache.
#[test]
fn prebuilt_libraries_key_the_cache_and_only_portable_ones_are_reused() {
    let Some(real) = std::env::var_os("LLAMA_SERVER_PREBUILT").filter(|dir| !dir.is_empty()) else {
        eprintln!("skipping: LLAMA_SERVER_PREBUILT is not set (the test command sets it)");
        return;
    };
    let real = Path::new(&real);
    let portable = "CXX_FLAGS = -O3 -msse4.2 -mf16c -mfma -mbmi2 -mavx -mavx2\n";
    let empty = Path::new("");
    let (from_source, _) = script_with(&["key"], None, Some(empty));

    let one = fake_prebuilt(real, "prebuilt-one", "one", portable);
    let (key_one, told) = script_with(&["key"], None, Some(&one));
    assert!(told.is_empty(), "reused without a word: {told}");
    assert_ne!(key_one, from_source, "reused libraries change the key");
    let two = fake_prebuilt(real, "prebuilt-two", "two", portable);
    let (key_two, _) = script_with(&["key"], None, Some(&two));
    assert_ne!(key_one, key_two, "other libraries, another key");

    for (name, flags) in [
        ("prebuilt-native", "CXX_FLAGS = -O3 -march=native -mavx2\n"),
        ("prebuilt-avx512", "CXX_FLAGS = -O3 -mavx2 -mavx512f\n"),
        ("prebuilt-sse", "CXX_FLAGS = -O3 -msse4.2\n"),
    ] {
        let refused = fake_prebuilt(real, name, "one", flags);
        let (key, told) = script_with(&["key"], None, Some(&refused));
        assert_eq!(key, from_source, "{name}: built from source instead");
        assert!(told.contains("not reusing"), "{name}: says why: {told}");
    }

    let other_version = fake_prebuilt(real, "prebuilt-version", "one", portable);
    std::fs::write(
        other_version.join("include/llama.h"),
        "// another llama.cpp\n",
    )
    .unwrap();
    let (key, told) = script_with(&["key"], None, Some(&other_version));
    assert_eq!(key, from_source);
    assert!(told.contains("llama.h differs"), "{told}");
}
