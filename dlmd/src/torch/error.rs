//! What can fail: finding torch and registering an operator ([`TorchError`]), and a call of an
//! operator ([`OpError`], raised by torch as `RuntimeError`).

use crate::import::ImportError;
use std::string::String;

/// torch's functions could not be found, or an operator could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TorchError {
    /// A torch library is not loaded in the process.
    #[error("{library} is not loaded: {why}")]
    Load {
        /// The library's name.
        library: &'static str,
        /// What the loader said.
        why: String,
    },
    /// A function of torch's stable ABI is missing (a torch older than 2.9).
    #[error("torch has no `{0}`: dlmd's operators need torch 2.9 or later")]
    Symbol(&'static str),
    /// An operator's name, namespace or parameter name is not an identifier, or its parameter
    /// names do not match its parameters.
    #[error("operator `{op}`: {why}")]
    Schema {
        /// The operator.
        op: String,
        /// What is wrong.
        why: &'static str,
    },
    /// torch refused a registration (an operator of that name already defined, for one).
    #[error("torch refused {what} `{name}` (status {status})")]
    Refused {
        /// What was asked.
        what: &'static str,
        /// Of what.
        name: String,
        /// torch's status code.
        status: i32,
    },
}

/// A call of an operator failed: torch raises it (Python as `RuntimeError`), with the
/// operator's name before the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError {
    message: String,
}

impl OpError {
    /// A failure, with what went wrong.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The failure, said of the parameter `name` (none where empty).
    pub(crate) fn of(self, name: &str) -> Self {
        if name.is_empty() {
            return self;
        }
        Self::new(std::format!("{name}: {}", self.message))
    }
}

impl core::fmt::Display for OpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {}

impl From<ImportError> for OpError {
    fn from(e: ImportError) -> Self {
        Self::new(std::format!("{e}"))
    }
}

#[cfg(feature = "cuda")]
impl From<crate::cuda::CudaError> for OpError {
    fn from(e: crate::cuda::CudaError) -> Self {
        Self::new(std::format!("{e}"))
    }
}
