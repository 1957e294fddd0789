//! Reporters: one emitter per output format behind one trait.
