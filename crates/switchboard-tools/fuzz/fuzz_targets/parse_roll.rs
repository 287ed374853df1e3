//! Fuzzes the dice grammar and roller: any input must give a roll or a DiceError, never a
//! panic, an overflow or a hang. Run: `cd crates/switchboard-tools/fuzz && cargo +nightly fuzz run parse_roll`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_tools::dice::{Dice, DiceSettings};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let dice = Dice::new(DiceSettings { tables_dir: None, seed: Some(0) });
        let _ = dice.roll(text);
    }
});
