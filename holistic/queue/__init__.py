"""The work stream: the envelope of an accepted batch, the consumer groups' queue, the janitor."""
