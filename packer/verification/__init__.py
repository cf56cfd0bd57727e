"""Answer verification, pure: reading a model's answer back (`answers`, `answer_sentences`,
`claims` and the readers of figures, dates and quoted terms) and checking it against the
packet its prompt was built from (`checks`); `replay` asks whether a stored packet is what
its inputs give today. Nothing here is needed to pack a request."""
