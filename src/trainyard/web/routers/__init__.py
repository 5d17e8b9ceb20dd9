"""One router per resource; handlers validate input and call domain functions."""
