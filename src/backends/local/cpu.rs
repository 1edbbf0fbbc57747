//! Which vector units llama.cpp was compiled for, against what this CPU has.
//!
//! llama.cpp's CPU kernels are chosen when it is compiled, not when it runs: a
//! build with AVX2 kernels dies of an illegal instruction on a CPU without AVX2.
//! The worker compares the two before it touches the model, so such a CPU gets a
//! clear [`ModelStatus::Failed`](super::ModelStatus::Failed) instead of a crash.

use std::fmt;

/// The vector units llama.cpp's kernels were compiled for in this build, and any
/// of them this CPU lacks.
///
/// Which units a build uses is set when it compiles: see "The CPU kernels" in
/// `docs/backends.md` for the `GGML_*` variables that turn them on.
///
/// ```no_run
/// # #[cfg(feature = "local-llm")] {
/// use bevy_npc_memory::backends::KernelFeatures;
///
/// let kernels = KernelFeatures::detect();
/// println!("llama.cpp kernels: {kernels}");
/// assert!(kernels.runs_here(), "this CPU lacks {:?}", kernels.missing);
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelFeatures {
    /// What the kernels were compiled for, in llama.cpp's names (`"AVX2"`, `"FMA"`).
    pub built: Vec<&'static str>,
    /// Those of them this CPU does not report. Non-empty means the model must not
    /// be run here.
    pub missing: Vec<&'static str>,
}

impl KernelFeatures {
    /// Asks the linked llama.cpp what it was compiled for, and the CPU what it has.
    pub fn detect() -> Self {
        let built: Vec<&'static str> = FEATURES
            .iter()
            .filter(|feature| (feature.built)())
            .map(|feature| feature.name)
            .collect();
        let missing = FEATURES
            .iter()
            .filter(|feature| (feature.built)() && !(feature.on_cpu)())
            .map(|feature| feature.name)
            .collect();
        Self { built, missing }
    }

    /// Whether this CPU has every unit the kernels need.
    pub fn runs_here(&self) -> bool {
        self.missing.is_empty()
    }

    /// `Err` with a message naming what is missing, for the model's status.
    pub(crate) fn require(&self) -> Result<(), String> {
        if self.runs_here() {
            return Ok(());
        }
        Err(format!(
            "this build's llama.cpp kernels need {}, which this CPU does not have; rebuild with those GGML_* variables OFF (docs/backends.md, \"The CPU kernels\")",
            self.missing.join(", ")
        ))
    }
}

impl fmt::Display for KernelFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.built.is_empty() {
            f.write_str("baseline (no vector extensions beyond the target's)")
        } else {
            f.write_str(&self.built.join(" "))
        }
    }
}

struct Feature {
    name: &'static str,
    built: fn() -> bool,
    on_cpu: fn() -> bool,
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::os::raw::c_int;

    // ggml's own reports of what it was compiled with: each returns a constant
    // from `#if defined(__AVX2__)` and the like, so calling one executes no vector
    // instruction, even on a CPU that lacks the unit.
    unsafe extern "C" {
        fn ggml_cpu_has_sse3() -> c_int;
        fn ggml_cpu_has_ssse3() -> c_int;
        fn ggml_cpu_has_avx() -> c_int;
        fn ggml_cpu_has_avx2() -> c_int;
        fn ggml_cpu_has_bmi2() -> c_int;
        fn ggml_cpu_has_f16c() -> c_int;
        fn ggml_cpu_has_fma() -> c_int;
        fn ggml_cpu_has_avx512() -> c_int;
        fn ggml_cpu_has_avx512_vbmi() -> c_int;
        fn ggml_cpu_has_avx512_vnni() -> c_int;
        fn ggml_cpu_has_avx512_bf16() -> c_int;
        fn ggml_cpu_has_amx_int8() -> c_int;
    }

    macro_rules! features {
        ($($name:literal: $ggml:ident, $detect:expr;)+) => {
            &[$(super::Feature {
                name: $name,
                // SAFETY: each takes no argument and returns a compile-time constant.
                built: || unsafe { $ggml() } != 0,
                on_cpu: || $detect,
            }),+]
        };
    }

    pub(super) const FEATURES: &[super::Feature] = features! {
        "SSE3": ggml_cpu_has_sse3, std::arch::is_x86_feature_detected!("sse3");
        "SSSE3": ggml_cpu_has_ssse3, std::arch::is_x86_feature_detected!("ssse3");
        "AVX": ggml_cpu_has_avx, std::arch::is_x86_feature_detected!("avx");
        "AVX2": ggml_cpu_has_avx2, std::arch::is_x86_feature_detected!("avx2");
        "BMI2": ggml_cpu_has_bmi2, std::arch::is_x86_feature_detected!("bmi2");
        "F16C": ggml_cpu_has_f16c, std::arch::is_x86_feature_detected!("f16c");
        "FMA": ggml_cpu_has_fma, std::arch::is_x86_feature_detected!("fma");
        "AVX512": ggml_cpu_has_avx512, std::arch::is_x86_feature_detected!("avx512f");
        "AVX512_VBMI": ggml_cpu_has_avx512_vbmi, std::arch::is_x86_feature_detected!("avx512vbmi");
        "AVX512_VNNI": ggml_cpu_has_avx512_vnni, std::arch::is_x86_feature_detected!("avx512vnni");
        "AVX512_BF16": ggml_cpu_has_avx512_bf16, std::arch::is_x86_feature_detected!("avx512bf16");
        "AMX_INT8": ggml_cpu_has_amx_int8, cpu_has_amx_int8();
    };

    /// CPUID leaf 7, EDX bit 25: std's detection of AMX is not stable yet.
    #[allow(unused_unsafe)]
    fn cpu_has_amx_int8() -> bool {
        use std::arch::x86_64::{__cpuid_count, __get_cpuid_max};
        // SAFETY: CPUID exists on every x86-64 CPU; leaf 7 is read only when the
        // CPU reports it.
        unsafe { __get_cpuid_max(0).0 >= 7 && __cpuid_count(7, 0).edx & (1 << 25) != 0 }
    }
}

#[cfg(target_arch = "x86_64")]
use x86::FEATURES;

// Elsewhere the build's kernels follow the Rust target, which the CPU has.
#[cfg(not(target_arch = "x86_64"))]
const FEATURES: &[Feature] = &[];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_unit_is_named_and_refused() {
        let kernels = KernelFeatures {
            built: vec!["AVX", "AVX2"],
            missing: vec!["AVX2"],
        };
        assert!(!kernels.runs_here());
        let error = kernels.require().unwrap_err();
        assert!(error.contains("AVX2"), "{error}");
        assert_eq!(kernels.to_string(), "AVX AVX2");
    }

    #[test]
    fn this_machine_runs_what_it_built() {
        // The test suite runs on the machine that built it, so nothing the kernels
        // need can be missing here.
        let kernels = KernelFeatures::detect();
        assert!(kernels.runs_here(), "{kernels:?}");
        assert!(kernels.require().is_ok());
    }

    /// The workspace's `.cargo/config.toml` asks llama.cpp for AVX2, FMA and F16C
    /// through `GGML_*` variables; this proves the build really honoured them.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_workspace_build_has_the_units_it_asked_for() {
        let asked = [
            ("AVX2", option_env!("GGML_AVX2")),
            ("FMA", option_env!("GGML_FMA")),
            ("F16C", option_env!("GGML_F16C")),
        ];
        let kernels = KernelFeatures::detect();
        for (unit, setting) in asked {
            assert_eq!(setting, Some("ON"), "the workspace asks for {unit}");
            assert!(
                kernels.built.contains(&unit),
                "GGML_{unit}=ON but llama.cpp was built with {kernels}"
            );
        }
    }
}
