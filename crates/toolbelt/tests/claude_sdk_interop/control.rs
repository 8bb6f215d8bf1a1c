//! Control requests.
