package gpu

// DefaultTypes returns HAMi v2.10's device table with its chart's default
// resource names: one row per device type of its 13 vendors (Ascend and
// Iluvatar one per chip), each written in its own vendor_<name>.go beside
// the HAMi source it follows.
func DefaultTypes() []DeviceType {
	types := []DeviceType{nvidiaType(), cambriconType(), hygonType(), mthreadsType(), awsNeuronType(), amdType(), vastaiType(), birenType()}
	types = append(types, metaxTypes()...)
	types = append(types, kunlunTypes()...)
	types = append(types, enflameTypes()...)
	for _, chip := range AscendChips() {
		types = append(types, AscendType(chip))
	}
	for _, chip := range IluvatarChips() {
		types = append(types, IluvatarType(chip))
	}
	return types
}
