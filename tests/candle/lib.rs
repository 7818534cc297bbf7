//! Integration tests of `dlmd::candle` (feature `candle`); see `candle.rs`.
