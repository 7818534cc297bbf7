//! The C enums of XLA's FFI API 0.3, as integer newtypes: a foreign frame can hold any value
//! in their place.

use crate::dlpack::c_enum;
use core::ffi::c_int;
use core::fmt;

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// What an extension in a struct's `extension_start` chain is (`XLA_FFI_Extension_Type`).
    ExtensionType(c_int) {
        /// A request for the handler's metadata ([`MetadataExtension`](super::MetadataExtension)).
        METADATA = 1,
    }
}

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// Status codes, as `absl::StatusCode` numbers them (`XLA_FFI_Error_Code`).
    ErrorCode(c_int) {
        /// Not an error.
        OK = 0,
        /// Cancelled.
        CANCELLED = 1,
        /// Unknown.
        UNKNOWN = 2,
        /// The call's arguments, results or attributes are not what the handler takes.
        INVALID_ARGUMENT = 3,
        /// A deadline passed.
        DEADLINE_EXCEEDED = 4,
        /// Not found.
        NOT_FOUND = 5,
        /// Already exists.
        ALREADY_EXISTS = 6,
        /// Permission denied.
        PERMISSION_DENIED = 7,
        /// Out of a resource.
        RESOURCE_EXHAUSTED = 8,
        /// The system is not in the state the call needs.
        FAILED_PRECONDITION = 9,
        /// Aborted.
        ABORTED = 10,
        /// Out of range.
        OUT_OF_RANGE = 11,
        /// Not implemented.
        UNIMPLEMENTED = 12,
        /// An invariant broke.
        INTERNAL = 13,
        /// Unavailable.
        UNAVAILABLE = 14,
        /// Data lost.
        DATA_LOSS = 15,
        /// Not authenticated.
        UNAUTHENTICATED = 16,
    }
}

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// An element type (`XLA_FFI_DataType`, XLA's `PrimitiveType` numbers).
    DataType(c_int) {
        /// Not a type.
        INVALID = 0,
        /// `bool`, one byte.
        PRED = 1,
        /// `s1`.
        S1 = 30,
        /// `s2`.
        S2 = 26,
        /// `s4`.
        S4 = 21,
        /// `i8`.
        S8 = 2,
        /// `i16`.
        S16 = 3,
        /// `i32`.
        S32 = 4,
        /// `i64`.
        S64 = 5,
        /// `u1`.
        U1 = 31,
        /// `u2`.
        U2 = 27,
        /// `u4`.
        U4 = 22,
        /// `u8`.
        U8 = 6,
        /// `u16`.
        U16 = 7,
        /// `u32`.
        U32 = 8,
        /// `u64`.
        U64 = 9,
        /// IEEE binary16.
        F16 = 10,
        /// IEEE binary32.
        F32 = 11,
        /// IEEE binary64.
        F64 = 12,
        /// bfloat16.
        BF16 = 16,
        /// Complex of two `f32`.
        C64 = 15,
        /// Complex of two `f64`.
        C128 = 18,
        /// An ordering token, no data.
        TOKEN = 17,
        /// FP8 E5M2.
        F8E5M2 = 19,
        /// FP8 E3M4.
        F8E3M4 = 29,
        /// FP8 E4M3 (IEEE-like).
        F8E4M3 = 28,
        /// FP8 E4M3FN.
        F8E4M3FN = 20,
        /// FP8 E4M3 with bias 11, finite, unsigned zero.
        F8E4M3B11FNUZ = 23,
        /// FP8 E5M2, finite, unsigned zero.
        F8E5M2FNUZ = 24,
        /// FP8 E4M3, finite, unsigned zero.
        F8E4M3FNUZ = 25,
        /// FP4 E2M1FN.
        F4E2M1FN = 32,
        /// FP8 E8M0FNU, the MX scale.
        F8E8M0FNU = 33,
    }
}

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// What an argument is (`XLA_FFI_ArgType`).
    ArgType(c_int) {
        /// A [`Buffer`](super::Buffer).
        BUFFER = 1,
    }
}

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// What a result is (`XLA_FFI_RetType`).
    RetType(c_int) {
        /// A [`Buffer`](super::Buffer).
        BUFFER = 1,
    }
}

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// What an attribute is (`XLA_FFI_AttrType`).
    AttrType(c_int) {
        /// An [`Array`](super::Array) of scalars.
        ARRAY = 1,
        /// Nested attributes ([`Attrs`](super::Attrs)).
        DICTIONARY = 2,
        /// A [`Scalar`](super::Scalar).
        SCALAR = 3,
        /// A string ([`ByteSpan`](super::ByteSpan)).
        STRING = 4,
    }
}

c_enum! {
    @standard "XLA's FFI API 0.3";
    /// Which stage of a call a frame is for (`XLA_FFI_ExecutionStage`).
    ExecutionStage(c_int) {
        /// The handler is instantiated with its executable.
        INSTANTIATE = 0,
        /// Before execution: resources requested.
        PREPARE = 1,
        /// Before execution: resources acquired.
        INITIALIZE = 2,
        /// The call itself.
        EXECUTE = 3,
    }
}
