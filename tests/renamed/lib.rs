//! dlmd renamed to `tensors` in Cargo.toml: `#[dlmd(crate = tensors)]` points the derive at it.

#[cfg(test)]
mod tests {
    use tensors::DlElement;

    #[derive(Clone, Copy, DlElement)]
    #[dlmd(crate = tensors)]
    #[repr(C)]
    struct Float3 {
        x: f32,
        y: f32,
        z: f32,
    }

    #[derive(Clone, Copy, DlElement)]
    #[dlmd(crate = ::tensors)]
    #[repr(transparent)]
    struct Celsius(f32);

    #[test]
    fn derive_reaches_the_renamed_crate() {
        assert_eq!(Float3::DTYPE.to_string(), "float32x3");
        assert_eq!(Celsius::DTYPE.to_string(), "float32");
        let v = Float3 { x: 1.0, y: 2.0, z: 3.0 };
        assert_eq!(v.x + v.y + v.z + Celsius(4.0).0, 10.0);
    }
}
