use dlmd::Dims;
use dlmd::cuda::{self, Gpu};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = Gpu::new(0)?;
    let kernels = gpu.load(first_kernel::PTX)?;

    let n = 1_000_000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = gpu.to_device(&x, Dims::new([n]))?;
    let mut y = gpu.to_device(&vec![1.0f32; n], Dims::new([n]))?;

    // One thread for every four elements of `y`, the view the kernel writes; on the Gpu's stream.
    let grid = y.grid();
    cuda::scope(|s| first_kernel::saxpy(s.launch(gpu.stream(), &kernels, grid), 2.0, x.view(), y.view_mut()))?;

    let y = y.to_vec()?; // waits for the kernel
    for (i, &v) in y.iter().enumerate() {
        assert_eq!(v, 2.0 * i as f32 + 1.0, "element {i}");
    }
    println!("saxpy: all {n} elements right");
    Ok(())
}
