"""Adds a backoff before the attention kernel's first load: a real slowdown for a bisection."""
import sys

path = sys.argv[1]
text = open(path).read()
anchor = "  const int lane = tid & 31;\n"
assert text.count(anchor) == 1, "the anchor line"
text = text.replace(
    anchor,
    anchor + "  for (int spin = 0; spin < 64; ++spin) __nanosleep(200);  // backoff before the first load\n",
)
open(path, "w").write(text)
print("backoff added")
