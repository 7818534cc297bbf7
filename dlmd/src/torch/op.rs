//! Operators: a Rust type's `call`, its parameters and returns as Rust types, and the schema
//! torch is given, made from those types.

use super::abi::{StableIValue, Torch};
use super::error::OpError;
use super::tensor::{Handle, Tensor, TensorMut};
use std::string::String;

mod sealed {
    pub trait Sealed {}
    /// [`Params`](super::Params)'s own: tuples are also `Returns`.
    pub trait Tuple {}
}

/// A parameter type of an operator, for a call that lasts `'a`: what its schema says, and how
/// the value on torch's stack becomes it. Sealed: the schema and the reading of the stack must
/// agree.
pub trait Param<'a>: sealed::Sealed + Sized {
    /// The schema's type (for a written tensor, without its alias set).
    #[doc(hidden)]
    const SCHEMA: &'static str;
    /// Whether the operator writes it (a tensor whose schema type is `Tensor(x!)`).
    #[doc(hidden)]
    const WRITTEN: bool = false;
    /// The value on the stack, owned from now on.
    ///
    /// # Safety
    ///
    /// `value` was put on the stack by torch for a parameter of type `Self::SCHEMA`, for a call
    /// that lasts `'a`. `name` is the parameter's, for its errors.
    #[doc(hidden)]
    unsafe fn take(value: StableIValue, torch: &'static Torch, name: &'static str) -> Result<Self, OpError>;
    /// For a tensor, the bytes its elements lie in (`start..end`, empty for no element).
    #[doc(hidden)]
    fn span(&self) -> Option<Result<(usize, usize), OpError>> {
        None
    }
}

impl sealed::Sealed for Tensor<'_> {}
impl<'a> Param<'a> for Tensor<'a> {
    const SCHEMA: &'static str = "Tensor";
    unsafe fn take(value: StableIValue, torch: &'static Torch, name: &'static str) -> Result<Self, OpError> {
        // SAFETY: an owned tensor reference (the caller: a `Tensor` parameter).
        let handle = unsafe { Handle::own(core::ptr::with_exposed_provenance_mut(value as usize), torch) };
        Ok(Tensor::new(handle.map_err(|e| e.of(name))?, name))
    }
    fn span(&self) -> Option<Result<(usize, usize), OpError>> {
        Some(self.handle.span().map_err(|e| e.of(self.name)))
    }
}

impl sealed::Sealed for TensorMut<'_> {}
impl<'a> Param<'a> for TensorMut<'a> {
    const SCHEMA: &'static str = "Tensor";
    const WRITTEN: bool = true;
    unsafe fn take(value: StableIValue, torch: &'static Torch, name: &'static str) -> Result<Self, OpError> {
        // SAFETY: an owned tensor reference (the caller: a `Tensor(a!)` parameter).
        let handle = unsafe { Handle::own(core::ptr::with_exposed_provenance_mut(value as usize), torch) };
        Ok(TensorMut::new(handle.map_err(|e| e.of(name))?, name))
    }
    fn span(&self) -> Option<Result<(usize, usize), OpError>> {
        Some(self.handle.span().map_err(|e| e.of(self.name)))
    }
}

impl sealed::Sealed for f64 {}
impl Param<'_> for f64 {
    const SCHEMA: &'static str = "float";
    unsafe fn take(value: StableIValue, _: &'static Torch, _: &'static str) -> Result<Self, OpError> {
        Ok(f64::from_bits(value))
    }
}

impl sealed::Sealed for i64 {}
impl Param<'_> for i64 {
    const SCHEMA: &'static str = "int";
    unsafe fn take(value: StableIValue, _: &'static Torch, _: &'static str) -> Result<Self, OpError> {
        Ok(value as i64)
    }
}

impl sealed::Sealed for bool {}
impl Param<'_> for bool {
    const SCHEMA: &'static str = "bool";
    unsafe fn take(value: StableIValue, _: &'static Torch, name: &'static str) -> Result<Self, OpError> {
        // torch copies the bool's one byte into the value; the others are not defined.
        match value as u8 {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(OpError::new(std::format!("a bool argument of byte {b}")).of(name)),
        }
    }
}

/// An operator's parameters for a call that lasts `'a`: a tuple of [`Param`]s (up to 12).
/// Sealed: its types make the schema, and the kernel moves the version counter of the values
/// it says are written tensors.
pub trait Params<'a>: sealed::Tuple + Sized {
    /// How many.
    const COUNT: usize;
    /// Each one's schema type and whether it is written.
    #[doc(hidden)]
    const TYPES: &'static [(&'static str, bool)];
    /// The values on the stack, owned from now on: every tensor among them is owned (and
    /// deleted) whatever else fails.
    ///
    /// # Safety
    ///
    /// `stack` holds `COUNT` values torch put there for a schema of these types, for a call
    /// that lasts `'a`. `names` are the parameters', for their errors.
    #[doc(hidden)]
    unsafe fn take(
        stack: &[StableIValue],
        torch: &'static Torch,
        names: &'static [&'static str],
    ) -> Result<Self, OpError>;
    /// Parameter `index`'s [`Param::span`].
    #[doc(hidden)]
    fn span(&self, index: usize) -> Option<Result<(usize, usize), OpError>>;
}

macro_rules! params {
    ($count:literal; $($p:ident $i:tt),*) => {
        impl<'a, $($p: Param<'a>),*> sealed::Tuple for ($($p,)*) {}
        impl<'a, $($p: Param<'a>),*> Params<'a> for ($($p,)*) {
            const COUNT: usize = $count;
            const TYPES: &'static [(&'static str, bool)] = &[$((<$p as Param<'a>>::SCHEMA, <$p as Param<'a>>::WRITTEN)),*];
            #[allow(unused_variables)]
            unsafe fn take(
                stack: &[StableIValue],
                torch: &'static Torch,
                names: &'static [&'static str],
            ) -> Result<Self, OpError> {
                // Every value is taken before any error returns, so that each tensor is owned
                // (and deleted) once.
                // SAFETY: the caller's, for each value.
                let taken = ($(unsafe {
                    <$p as Param<'a>>::take(stack[$i], torch, names.get($i).copied().unwrap_or(""))
                },)*);
                Ok(($(taken.$i?,)*))
            }
            #[allow(unused_variables)]
            fn span(&self, index: usize) -> Option<Result<(usize, usize), OpError>> {
                match index {
                    $($i => self.$i.span(),)*
                    _ => None,
                }
            }
        }
    };
}

params!(0;);
params!(1; A 0);
params!(2; A 0, B 1);
params!(3; A 0, B 1, C 2);
params!(4; A 0, B 1, C 2, D 3);
params!(5; A 0, B 1, C 2, D 3, E 4);
params!(6; A 0, B 1, C 2, D 3, E 4, F 5);
params!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
params!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
params!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
params!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
params!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
params!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// What an operator returns: `()`, or one to three new tensors ([`Torch::empty`]: only those
/// live past a call, so a parameter cannot be returned as a new tensor).
pub trait Returns: sealed::Sealed {
    /// How many.
    const COUNT: usize;
    /// The values for the stack, handed to torch.
    #[doc(hidden)]
    fn give(self, stack: &mut [StableIValue]);
}

impl sealed::Sealed for () {}
impl Returns for () {
    const COUNT: usize = 0;
    fn give(self, _: &mut [StableIValue]) {}
}

impl Returns for TensorMut<'static> {
    const COUNT: usize = 1;
    fn give(self, stack: &mut [StableIValue]) {
        stack[0] = self.handle.into_raw().expose_provenance() as StableIValue;
    }
}

/// A new tensor, as returned.
type New = TensorMut<'static>;

macro_rules! returns {
    ($count:literal; $($t:ident $i:tt),*) => {
        impl sealed::Sealed for ($($t,)*) {}
        impl Returns for ($($t,)*) {
            const COUNT: usize = $count;
            fn give(self, stack: &mut [StableIValue]) {
                $(stack[$i] = self.$i.handle.into_raw().expose_provenance() as StableIValue;)*
            }
        }
    };
}

returns!(2; New 0, New 1);
returns!(3; New 0, New 1, New 2);

/// A torch operator implemented in Rust: its name, its parameters' names and types, and what
/// a call does. [`Torch::register`] defines it in a namespace, with the schema its types make,
/// and implements it for dispatch keys.
///
/// ```
/// use dlmd::torch::{Op, OpError, TensorMut};
///
/// /// `scale(Tensor(a!) x, float by) -> ()`: `x *= by` on a float32 host tensor.
/// struct Scale;
///
/// impl Op for Scale {
///     const NAME: &'static str = "scale";
///     const PARAMS: &'static [&'static str] = &["x", "by"];
///     type Params<'a> = (TensorMut<'a>, f64);
///     type Returns = ();
///
///     fn call((mut x, by): Self::Params<'_>) -> Result<(), OpError> {
///         let view = x.view_mut::<dlmd::HostMdspanAliasedMut<'_, f32, dlmd::Dims<1>>>()?;
///         for i in 0..view.extent(0) {
///             view.store([i], view.load([i]) * by as f32);
///         }
///         Ok(())
///     }
/// }
/// assert_eq!(dlmd::torch::schema::<Scale>().unwrap(), "scale(Tensor(a!) x, float by) -> ()");
/// ```
pub trait Op: 'static {
    /// The operator's name in its namespace: an identifier.
    const NAME: &'static str;
    /// Each parameter's name in the schema, one per element of [`Params`](Self::Params).
    const PARAMS: &'static [&'static str];
    /// The parameters of a call that lasts `'a`: a tuple of [`Tensor<'a>`](Tensor) (read),
    /// [`TensorMut<'a>`](TensorMut) (written in place), `f64`, `i64` and `bool`. The tensors
    /// are the call's: they cannot be kept past it, nor returned.
    type Params<'a>: Params<'a>;
    /// What a call returns.
    type Returns: Returns;

    /// A call. An `Err` or a panic is raised by torch (Python: `RuntimeError`), with the
    /// operator's name. A tensor read by the operator that shares memory with one it writes
    /// is refused before the call (judged by the range of bytes each spans, so interleaved
    /// views of one tensor, one read and one written, are refused too).
    fn call(params: Self::Params<'_>) -> Result<Self::Returns, OpError>;
}

/// The words torch's schema lexer reads as keywords, not names.
const KEYWORDS: &[&str] = &[
    "Ellipsis", "False", "None", "NoneType", "True", "and", "as", "assert", "break", "class", "continue", "def", "del",
    "elif", "else", "for", "global", "if", "import", "in", "is", "not", "or", "pass", "raise", "return", "while",
    "with",
];

/// Whether `name` is an identifier as torch's schema parser takes one (not one of its
/// keywords).
pub(crate) fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

/// The schema torch is given for `O`: its name, each parameter's type and name (a written
/// tensor in an alias set of its own, `Tensor(a!)`, `Tensor(b!)`…), and its returns.
pub fn schema<O: Op>() -> Result<String, super::TorchError> {
    let refuse = |why| super::TorchError::Schema {
        op: O::NAME.into(),
        why,
    };
    if !identifier(O::NAME) {
        return Err(refuse(
            "the name is not an identifier (or is a keyword of torch's schemas)",
        ));
    }
    let types = <O::Params<'static> as Params<'static>>::TYPES;
    if O::PARAMS.len() != types.len() {
        return Err(refuse("PARAMS does not name each parameter once"));
    }
    if !O::PARAMS.iter().all(|p| identifier(p)) {
        return Err(refuse(
            "a parameter's name is not an identifier (or is a keyword of torch's schemas)",
        ));
    }
    if O::PARAMS.iter().enumerate().any(|(i, p)| O::PARAMS[..i].contains(p)) {
        return Err(refuse("two parameters have the same name"));
    }
    let mut sets = b'a'..=b'z';
    let mut params = std::vec::Vec::new();
    for (&(ty, written), name) in types.iter().zip(O::PARAMS) {
        if written {
            let set = sets.next().ok_or(refuse("more than 26 written tensors"))? as char;
            params.push(std::format!("{ty}({set}!) {name}"));
        } else {
            params.push(std::format!("{ty} {name}"));
        }
    }
    let returns = match <O::Returns as Returns>::COUNT {
        0 => "()".into(),
        1 => "Tensor".into(),
        n => std::format!("({})", std::vec!["Tensor"; n].join(", ")),
    };
    Ok(std::format!("{}({}) -> {returns}", O::NAME, params.join(", ")))
}
