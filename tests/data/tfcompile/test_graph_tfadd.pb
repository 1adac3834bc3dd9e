
5
x_constConst*
dtype0*
valueB:
5
y_constConst*
dtype0*
valueB:
+
x_y_sumAddV2x_consty_const*
T0"ª