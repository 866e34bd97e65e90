//! Resource quantities as controllers compare them: kyb-validation's parser (the API
//! server's), scaled to a whole number of small units.

use kyb_validation::quantity::Quantity;

/// `text` × 10^`scale`, rounded up and saturating (`scale` 3: thousandths, 9: nano-units);
/// `None` when it does not parse or has no number before its suffix (`"Gi"`).
pub fn parse_scaled(text: &str, scale: i32) -> Option<i128> {
    let text = text.trim();
    let unsigned = text.trim_start_matches(['+', '-']);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    Some(Quantity::parse(text).ok()?.scaled_value(scale))
}
