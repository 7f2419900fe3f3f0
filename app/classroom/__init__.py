"""The classroom: rooms a presenter drives and followers watch, the live quiz, saved lessons."""
