//! Byte views of [`AnyBitPattern`] data, for copies between element types.
//!
//! Written here rather than with `bytemuck`: its `Pod` would have to be implemented by
//! `#[derive(DeviceCopy)]`, which would clash with a user's own `#[derive(Pod)]`; the
//! [`AnyBitPattern`] contract is what makes these casts sound.

use crate::device_copy::AnyBitPattern;

/// The bytes of a slice of [`AnyBitPattern`] values (which have no padding, so every byte is
/// initialised).
pub(crate) fn bytes_of<T: AnyBitPattern>(values: &[T]) -> &[u8] {
    // SAFETY: `T` has no padding, so the slice's `size_of_val` bytes are initialised; `u8` has
    // alignment 1; the borrow keeps the memory alive and unwritten.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// The bytes of a slice of [`AnyBitPattern`] values, to write (any bytes make values of `T`).
pub(crate) fn bytes_of_mut<T: AnyBitPattern>(values: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(values);
    // SAFETY: as in `bytes_of`; every bit pattern written is a value of `T`, and the unique
    // borrow rules out other access meanwhile.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), len) }
}

/// `v`'s allocation as a `Vec<U>`, when `U` has `T`'s alignment and the allocation holds a
/// whole number of `U`s; `v` back otherwise.
pub(crate) fn cast_vec<T: AnyBitPattern, U: AnyBitPattern>(v: Vec<T>) -> Result<Vec<U>, Vec<T>> {
    let (size, to_size) = (std::mem::size_of::<T>(), std::mem::size_of::<U>());
    let (len, cap) = (v.len() * size, v.capacity() * size);
    if std::mem::align_of::<T>() != std::mem::align_of::<U>()
        || to_size == 0
        || !len.is_multiple_of(to_size)
        || !cap.is_multiple_of(to_size)
    {
        return Err(v);
    }
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: the allocation came from the global allocator with `T`'s alignment, which is
    // `U`'s, and `cap` bytes, which are `cap / to_size` whole `U`s; its first `len` bytes are
    // initialised, and any bytes are values of `U`. `v` is not dropped, so it is freed once.
    Ok(unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast(), len / to_size, cap / to_size) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_the_values_in_memory_order() {
        let mut v = [0x0403_0201u32, 0x0807_0605];
        let expect: Vec<u8> = v.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(bytes_of(&v), expect);
        bytes_of_mut(&mut v)[4] = 9;
        assert_eq!(v[1].to_ne_bytes()[0], 9);
    }

    #[test]
    fn cast_vec_keeps_the_allocation_only_where_it_fits() {
        let mut words = Vec::with_capacity(4);
        words.extend([1u32, 2, 3]);
        let ptr = words.as_ptr() as usize;
        let floats: Vec<f32> = cast_vec(words).unwrap();
        assert_eq!((floats.as_ptr() as usize, floats.len()), (ptr, 3));
        assert_eq!(floats[2].to_bits(), 3);
        // Another alignment, or a capacity that is not whole elements, gives the vector back.
        assert_eq!(cast_vec::<u32, u8>(vec![7u32]).unwrap_err(), [7]);
        let odd: Vec<[u8; 3]> = Vec::with_capacity(3);
        assert!(cast_vec::<[u8; 3], [u8; 2]>(odd).is_err());
        assert!(cast_vec::<u8, [u8; 0]>(vec![1u8]).is_err());
    }
}
