"""Templates and pictures: reports, mails and charts."""
