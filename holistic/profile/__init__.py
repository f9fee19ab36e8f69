"""Reading a profile: time windows, the fold of every family into one Profile, what is pending."""
