//! dlmd renamed to `tensors` in Cargo.toml: `#[dlmd(crate = tensors)]` points the derive at it,
//! and `dlmd!` finds it by itself.

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

    #[test]
    fn the_view_macro_reaches_the_renamed_crate() {
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let md: tensors::HostMdspan<'_, f32, (tensors::Const<2>, tensors::Const<3>)> = tensors::dlmd!(&data, [2, 3]);
        assert_eq!(md[[1, 2]], 6.0);
        let mut buf = vec![0i32; 6];
        let rows = 2;
        let mut m = tensors::dlmd!(&mut buf, [rows, _], layout_left);
        m[[1, 2]] = 7;
        assert_eq!(buf[5], 7);
        let strided = tensors::dlmd!(&data, [rows, 2], layout_stride, strides = [3, 2]);
        assert_eq!(strided[[1, 1]], 6.0);
        let x = 2.5f64;
        assert_eq!(tensors::dlmd!(&x, [])[[]], 2.5);
    }
}
