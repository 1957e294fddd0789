//! The runtime guard of fenced.
