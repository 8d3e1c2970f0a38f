package store

// RawColumn reads column of every row of table as the database holds it,
// for tests that check what is stored at rest.
func RawColumn(s *Store, table, column string) ([]string, error) {
	var out []*string
	if err := s.db.Table(table).Order("id").Pluck(column, &out).Error; err != nil {
		return nil, err
	}
	vals := make([]string, len(out))
	for i, v := range out {
		if v != nil {
			vals[i] = *v
		}
	}
	return vals, nil
}
