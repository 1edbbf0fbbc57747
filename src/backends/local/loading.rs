//! Loading the model: llama.cpp started once per process, the file checked before
//! llama.cpp reads it, and what was learned about the model (its chat template).

use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::{LogOptions, send_logs_to_tracing};

use super::config::LocalLlmConfig;
use super::cpu::KernelFeatures;
use super::status::ChatTemplateSource;
use super::tokenizer::PromptTokenizer;

/// llama.cpp's global state may be set up once per process, but a game may create
/// several backends (or recreate one), so they share it.
pub(super) fn llama(logs: bool) -> Result<&'static LlamaBackend, String> {
    static LLAMA: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    LLAMA
        .get_or_init(|| {
            send_logs_to_tracing(LogOptions::default().with_logs_enabled(logs));
            LlamaBackend::init().map_err(|error| format!("llama.cpp did not start: {error}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A loaded model and what was learned about it.
pub(super) struct Loaded {
    pub(super) model: LlamaModel,
    pub(super) llama: &'static LlamaBackend,
    pub(super) template: Option<LlamaChatTemplate>,
    pub(super) tokenizer: PromptTokenizer,
}

impl Loaded {
    pub(super) fn template_source(&self) -> ChatTemplateSource {
        if self.template.is_some() {
            ChatTemplateSource::Gguf
        } else {
            ChatTemplateSource::ChatMlFallback
        }
    }
}

pub(super) fn load(config: &LocalLlmConfig) -> Result<Loaded, String> {
    let path = &config.model_path;
    check_file(path)?;
    // Before llama.cpp runs a single kernel: a CPU that lacks what they were
    // compiled for would die of an illegal instruction.
    let kernels = KernelFeatures::detect();
    kernels.require()?;
    tracing::debug!("llama.cpp kernels: {kernels}");
    let llama = llama(config.llama_logs)?;
    let model = LlamaModel::load_from_file(llama, path, &LlamaModelParams::default()).map_err(
        |error| {
            format!(
                "llama.cpp could not load {}: {error} (the file may be truncated, damaged, or a model architecture this llama.cpp does not know)",
                path.display()
            )
        },
    )?;
    let template = match model.chat_template(None) {
        Ok(template) => Some(template),
        Err(_) => {
            tracing::warn!(
                target: crate::trace::TELEMETRY_TARGET,
                "{} has no chat template; using ChatML, which may not be what the model was tuned on",
                path.display()
            );
            None
        }
    };
    let tokenizer = PromptTokenizer::new(&model.vocab());
    Ok(Loaded {
        model,
        llama,
        template,
        tokenizer,
    })
}

/// Catches the common mistakes with a clear message before llama.cpp sees the file.
fn check_file(path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::open(path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            format!(
                "no model file at {} (run scripts/fetch-model.sh for the demo model, or pass the path of any GGUF)",
                path.display()
            )
        } else {
            format!("could not open the model file {}: {error}", path.display())
        }
    })?;
    if !file.metadata().map(|meta| meta.is_file()).unwrap_or(false) {
        return Err(format!("{} is not a file", path.display()));
    }
    let mut magic = [0u8; 4];
    match file.read_exact(&mut magic) {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Ok(()) => Err(format!(
            "{} is not a GGUF model file (it does not start with \"GGUF\")",
            path.display()
        )),
        Err(_) => Err(format!(
            "{} is too short to be a GGUF model file",
            path.display()
        )),
    }
}
